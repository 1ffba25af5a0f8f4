"""apps/v1 Deployment: the `deployment` kind (upstream's deployment framework).

A Deployment is never queued itself: its webhook marks its pod template so every Pod its
ReplicaSets create is queued as a plain Pod (`integrations.pod`) — the queue name and
WorkloadPriorityClass copied onto the template, the label `kueue.x-k8s.io/managed=true`
and `kueue.x-k8s.io/pod-suspending-parent: deployment`, so the Pod webhook gates each
Pod (without the Pod finalizer, as upstream: a ReplicaSet deletes surplus Pods at once).
Each replica is one Workload of one pod, admitted on its own within quota; scaling up adds
gated Pods that queue, scaling down deletes Pods and their Workloads release the quota.
Enabling `deployment` enables `pod` (upstream does it implicitly). `kind.DEPLOYMENT` is
what the registry holds; `webhook` holds the rules.
"""

"""apps/v1 StatefulSet: the `statefulset` kind (upstream's statefulset framework).

A StatefulSet is queued as one serving pod group (`integrations.pod.pod_group`): its
webhook marks the pod template so every Pod the StatefulSet controller creates is gated
and belongs to the group `statefulset-<name>` of `replicas` Pods, with fast admission (the
Workload is built from the first Pod, for all replicas: StatefulSets create Pods one by
one), serving (never finished while it runs) and one role `main`. The group's Workload is
admitted for all replicas at once and holds the quota while the StatefulSet runs; scaling
to zero or deleting it removes the Pods and so the Workload, releasing the quota. As
upstream, replicas cannot change except to or from zero. Enabling `statefulset` enables
`pod`. `kind.STATEFULSET` is what the registry holds; `webhook` holds the rules.
"""

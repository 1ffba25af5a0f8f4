"""leaderworkerset.x-k8s.io/v1 LeaderWorkerSet: the `leaderworkerset.x-k8s.io/leaderworkerset`
kind (upstream's leaderworkerset framework).

A LeaderWorkerSet runs `replicas` groups of `size` Pods (a leader and `size - 1` workers)
and is never suspended: Kueue queues each group as one Workload (pod sets `leader` 1 and
`worker` size-1, or `main` size without a leader template), built ahead by the group
controller (`framework.group_workloads`) and named after the LeaderWorkerSet, the group
index and its UID. The webhook marks both pod templates (queue name, priority class,
pod-suspending-parent, serving pod group) so the Pod webhook gates every Pod; the
controller then marks each Pod as a member of its group's pod group naming the prebuilt
Workload, and the Pod integration ungates each group all together on admission.
Enabling it enables `pod`. `kind.LEADERWORKERSET` is what the registry holds.
"""

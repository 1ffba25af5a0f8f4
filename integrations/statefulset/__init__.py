"""apps/v1 StatefulSet: the `statefulset` kind (upstream v0.19.2's statefulset framework).

A StatefulSet is queued as one pod group whose Workload its reconciler prebuilds (the
`PrebuildsGroupWorkloads` design the LeaderWorkerSet uses): the webhook marks the pod
template so every Pod the StatefulSet controller creates is gated; the group controller
keeps one Workload `statefulset-<name>-<hash>` (upstream's name) for all replicas and
marks each Pod as a member of that group (serving, fast admission, role `main`), and the
Pod integration admits the group all together. Scaled to zero, the Workload is kept and
put on hold (QuotaReserved=False `OnHold`: quota released, not queued); scaled up again
it is queued again. Deleting the StatefulSet deletes its Workload. As upstream, replicas
cannot change except to or from zero. Enabling `statefulset` enables `pod`.
`kind.STATEFULSET` is what the registry holds; `webhook` holds the rules, `groups` the
group's Workload and Pod marks.
"""

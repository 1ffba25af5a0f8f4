"""v1 Pod <-> Workload: the `pod` kind (upstream's plain-Pod integration).

A Pod cannot be suspended, so Kueue holds it back instead: the mutating webhook gives a
Pod that names a LocalQueue (in a namespace `managedJobsNamespaceSelector` selects) the
scheduling gate `kueue.x-k8s.io/admission`, the finalizer `kueue.x-k8s.io/managed` and
the label `kueue.x-k8s.io/managed=true`; the Pod is queued as a Workload of one pod set
`main` of one pod; on admission the gate comes off and the flavor's nodeSelector and
tolerations go on, so the scheduler places it; a Pod stopped after it started (evicted,
preempted) is deleted, since nothing can suspend it; it is finished from its phase and
its finalizer is released once its Workload is finished or it is deleted. Pods owned by
another enabled kind (a Job's pods) are left to that kind. Everything here is pure;
`kind.POD` is what the registry holds:
- `pod_fields`: names and reading a Pod dict (gates, phase, conditions);
- `pod_sets`: its one pod set;
- `admission`: ungating on an admission, the stop plan;
- `status`: finished / pods ready;
- `webhook`: defaulting and validation.
"""

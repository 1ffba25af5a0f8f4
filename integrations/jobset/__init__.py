"""jobset.x-k8s.io/v1alpha2 JobSet <-> Workload: the `jobset.x-k8s.io/jobset` kind.

A JobSet is queued as one Workload with one pod set per replicated job (named after it,
in spec order, `replicas x min(parallelism, completions)` pods); the JobSet controller
creates its child Jobs once Kueue unsuspends it. Everything here is pure; `kind.JOBSET`
is what the registry holds:
- `jobset_fields`: reading a JobSet dict (replicated jobs, counts, status);
- `pod_sets`: its pod sets and topology requests;
- `admission`: start on an admission, stop and restore in one write;
- `status`: finished / active / pods ready / reclaimable pods.
Webhook rules and the MultiKueue copy are the framework's (upstream's JobSet adds no
rules of its own beyond topology requests).
"""

"""batch/v1 Job <-> Workload, the cluster-free part: the `batch/job` kind on the seam.

Every function here is pure: Jobs go in and out as plain dicts (their JSON shape), Kueue
objects as `core.api` structs. `kind.BATCH_JOB` is what the registry holds; the rest is
what it answers from:
- `job_fields`: reading a Job dict with Kubernetes' defaults;
- `pod_sets`: the Job's one `main` pod set (count, minCount, topology request);
- `webhook`: the Job's own validation (partial admission) beside the shared rules;
- `admission`: start an admitted Job; plan the writes that stop and restore it;
- `status`: finished / active / pods ready / reclaimable pods from the Job's status;
- `multikueue_adapter`: the remote copy for a worker and the status copy-back rule.
"""

"""batch/v1 Job <-> Workload, the cluster-free part: what the Job controller and webhooks do.

Every function here is pure: Jobs go in and out as plain dicts (their JSON shape), Kueue
objects as `core.api` structs, and nothing is read from or written to a cluster. The hub's
reconcilers and webhook server look up what is needed in their caches, call these, and
write the results.

- `job_fields`: reading a Job dict with Kubernetes' defaults;
- `webhook`: defaulting (queue, suspend, managedBy) and validation, AdmissionReview in/out;
- `workload_builder`: the Workload for a Job (name, pod set, minCount, priority, owner);
- `workload_matching`: whether a Workload still matches its Job, and what to do if not;
- `admission`: start an admitted Job; plan the writes that stop and restore it;
- `status`: finished / active / pods ready / reclaimable pods from the Job's status;
- `multikueue_adapter`: the remote copy for a worker and the status copy-back rule.
"""

"""The Kueue manager runtime that both the hub and the worker agent run.

Informers feed the one `Engine` (engine_host, cluster_object_feed, workload_feed); the
scheduler loop runs its cycles; every decision reaches the API server as one status patch
guarded by the object's resourceVersion (workload_status_sync); queue statuses, finalizers
and the jobs of every enabled kind (one generic `job_controller` per kind, from the
job-framework registry) are reconciled by small controllers that read caches and write
only differences. `manager.KueueManager` wires them together under leader election; the
hub (`hub.app.Hub`) adds MultiKueue and visibility, the agent its capacity reports.
"""

"""The hub's runtime: the engine on a real API server.

Informers feed the one `Engine` (engine_host, cluster_object_feed, workload_feed); the
scheduler loop runs its cycles; every decision reaches the API server as one status patch
guarded by the object's resourceVersion (workload_status_sync); queue statuses, finalizers
and batch/v1 Jobs are reconciled by small controllers that read caches and write only
differences. `hub.app` wires them together under leader election.
"""

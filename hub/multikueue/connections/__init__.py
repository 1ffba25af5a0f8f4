"""Connections from the hub to MultiKueue worker clusters.

- `kubeconfig_source`, `kubeconfig_safety`, `kubeconfig_file_watch`: where a worker's
  kubeconfig comes from, whether the hub may use it (misconfigured is never retried until
  it changes), and noticing when a kubeconfig file changes;
- `worker_connection`, `remote_caches`, `reconnect_backoff`: one client and set of caches
  per worker, health probes, reconnects with upstream's backoff (and at once when a worker
  that was down listens again);
- `connection_failure`: why an attempt failed (refused, timed out, TLS, credentials...),
  in the words the Active condition shows;
- `cluster_controller`, `admission_check_controller`, `active_condition`: upstream's
  `Active` conditions on MultiKueueClusters and MultiKueue AdmissionChecks;
- `registry`, `worker_events`: the view dispatch reads, and change notifications;
- `service`: `MultiKueueConnections`, all of it as one task for the hub to run.
"""

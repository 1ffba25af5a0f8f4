"""The pending-workloads visibility API (`visibility.kueue.x-k8s.io`), served by the hub.

Upstream Kueue answers "where is my workload in the queue?" from its in-memory queues
through an aggregated API server; fleetq does the same from the engine, with the same
paths, query parameters and response shapes, so `kubectl get --raw` and upstream's
generated clients work unchanged. Behind the kube-aggregator it is served over TLS
(`tls`) with delegated authentication and authorization (`delegated_auth`): the cluster
says whom to trust and who may read which queue.
"""

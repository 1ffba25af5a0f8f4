"""`fleetq join`: register worker clusters with the manager from a fleet file (clusters.yaml).

The package is split by idea: the fleet file, the objects made on workers (identity, mirror),
the minted kubeconfig and token, the objects made on the manager, how an apply is judged
(created / changed / unchanged), the permission preflight, the run itself and its report.
"""

"""Everyday fleet operation from the command line: status, list, describe, stop/resume, logs.

Each command reads the manager (and, for worker capacity and logs, the workers through the
kubeconfig Secrets the hub itself uses) with plain REST and decodes objects into
`core.api` structs. Commands print rich tables by default and `-o json|yaml` views for
scripts; exit status 0 means success, 1 a cluster-side failure (not found, unreachable,
refused), 2 wrong arguments or an unusable kubeconfig.
"""

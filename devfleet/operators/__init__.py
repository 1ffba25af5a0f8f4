"""Third-party operators the local fleet runs out of cluster (JobSet, KubeRay, Kubeflow...).

One launcher (`process.OperatorProcess`) runs any of them from its `spec.Operator`: the
binary built by `fleetq dev tools`, CRDs and webhook manifests read from the operator's
own Go module, a serving certificate we issue, loopback ports. `catalog.OPERATORS` lists
every operator the fleet knows; a new operator is one module here and one catalog line.
"""

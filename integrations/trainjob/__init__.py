"""trainer.kubeflow.org/v1alpha1 TrainJob <-> Workload: the `trainer.kubeflow.org/trainjob` kind.

A TrainJob (Kubeflow Trainer v2.0) is queued as one Workload with one pod set per
replicated job of the JobSet Trainer builds for it from its (Cluster)TrainingRuntime;
Trainer creates that JobSet (queued with the TrainJob, never on its own) once Kueue
unsuspends the TrainJob. Everything here is pure; `kind.TRAINJOB` is what the registry
holds, and the manager binds it to its caches of runtimes and JobSets:
- `trainjob_fields`: reading a TrainJob dict and its runtime reference;
- `pod_spec_override`: how Trainer merges a `podSpecOverrides` entry into a pod spec;
- `runtime_jobset`: the JobSet's replicated jobs, rebuilt from the runtime;
- `pod_sets`: the Workload's pod sets from them;
- `admission`: start through overrides (two writes), stop and restore;
- `status`: finished / active / pods ready / reclaimable pods.
"""

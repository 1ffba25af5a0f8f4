"""kubeflow.org/v1 training jobs <-> Workloads: the Kubeflow training operator's job family.

PyTorchJob, TFJob, XGBoostJob, PaddleJob and JAXJob differ only in their replica-specs
field and replica types, so, as upstream Kueue does (`kubeflow/kubeflowjob` plus one small
package per kind), one kind class serves them all and each job is a definition:
- `kind`: `KubeflowJobKind`, the seam's answers for any of them, delegating to
  `integrations.framework.replica_spec_jobs` (replica specs, runPolicy, conditions);
- `jobs/<kind>.py`: each kind's framework name, plural, replica-specs field and replica
  types in upstream's pod-set order, and its module constant (`PYTORCHJOB`, ...).
Webhook rules and the MultiKueue copy are the framework's, with suspend and managedBy
read from and written to `spec.runPolicy`.
"""

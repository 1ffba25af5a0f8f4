"""Jobs shaped like Kubeflow's: a map of replica types to ReplicaSpecs and a `runPolicy`.

The Kubeflow training operator's v1 jobs (PyTorchJob, TFJob, XGBoostJob, PaddleJob, JAXJob)
and the MPI Operator's v2beta1 MPIJob share one shape, and upstream Kueue treats them the
same way (`kubeflowjob.KubeflowJob`, `mpijob.MPIJob`); both kinds' packages build on this
module, so the shape is read in one place:
- `spec.<replicaSpecsField>` maps a replica type (`Master`, `Worker`, ...) to a ReplicaSpec
  with `replicas` (default 1) and a pod `template`;
- `spec.runPolicy.suspend` and `spec.runPolicy.managedBy` are where suspend and managedBy
  live; `spec.runPolicy.schedulingPolicy.priorityClass` names the pods' PriorityClass;
- `status.conditions` carry `Succeeded`, `Failed` and `Running`, `status.replicaStatuses`
  maps replica types to their `active`/`succeeded`/`failed` counts.

Pod sets: one per replica type present, in the kind's fixed order (not the map's), named
after the type in lower case (upstream's `NewPodSetReference`), `replicas` pods, no
minCount (neither operator supports partial admission under Kueue). Start unsuspends with
each replica type's template pointed at its pod set's flavors; a stop suspends and puts
the recorded templates back in one write (both operators accept template changes on a
suspended job and delete its pods when it is suspended).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.api.resource_flavor import ResourceFlavor
from core.api.workload import PodSet, Workload
from core.api.workload_conditions import WorkloadReason
from integrations.framework.env_deduplication import fold_duplicate_env
from integrations.framework.job_kind import JobFinish, JobSubresource, JobWrite
from integrations.framework.job_metadata import Job, int_value, section, spec, status
from integrations.framework.json_patch import diff
from integrations.framework.pod_set_info import (
    InvalidPodSetInfo,
    infos_from_admission,
    merge_into_template,
    restore_template,
)
from integrations.framework.topology_request import topology_request_from_template

SUCCEEDED = "Succeeded"
FAILED = "Failed"
RUNNING = "Running"


@dataclass(frozen=True, slots=True)
class ReplicaSpecShape:
    """Where one kind keeps its replica specs and in which order Kueue lists them."""

    replica_specs_field: str
    """`pytorchReplicaSpecs`, `tfReplicaSpecs`, `mpiReplicaSpecs`, ..."""
    replica_types: tuple[str, ...]
    """Every replica type the kind knows, in upstream's pod-set order."""
    replica_index_label: str
    """The label the operator puts on each pod with its index within its replica type
    (the pod index of a topology request)."""

    def replica_specs(self, job: Job) -> Mapping[str, Any]:
        return section(spec(job), self.replica_specs_field)

    def present_types(self, job: Job) -> list[str]:
        """The replica types the job has (a null entry is absent), in Kueue's order."""
        specs = self.replica_specs(job)
        return [t for t in self.replica_types if isinstance(specs.get(t), Mapping)]

    def unknown_types(self, job: Job) -> list[str]:
        """Replica types the job names that the kind does not know (Kueue ignores them)."""
        return sorted(str(t) for t in self.replica_specs(job) if t not in self.replica_types)


def pod_set_name(replica_type: str) -> str:
    """A replica type's pod-set name: the type in lower case, as upstream names it."""
    return replica_type.lower()


def replicas(replica_spec: Mapping[str, Any]) -> int:
    value = int_value(replica_spec.get("replicas"))
    return 1 if value is None else value


def pod_template(replica_spec: Mapping[str, Any]) -> Mapping[str, Any]:
    return section(replica_spec, "template")


# -- runPolicy ----------------------------------------------------------------------------
def run_policy(job: Job) -> Mapping[str, Any]:
    return section(spec(job), "runPolicy")


def is_suspended(job: Job) -> bool:
    return run_policy(job).get("suspend") is True


def managed_by(job: Job) -> str | None:
    value = run_policy(job).get("managedBy")
    return value if isinstance(value, str) else None


def set_suspend(job: dict[str, Any]) -> None:
    job.setdefault("spec", {}).setdefault("runPolicy", {})["suspend"] = True


def set_managed_by(job: dict[str, Any], value: str) -> None:
    job.setdefault("spec", {}).setdefault("runPolicy", {})["managedBy"] = value


def drop_managed_by(job_spec: dict[str, Any]) -> None:
    """Clear runPolicy.managedBy of a spec (the remote copy: the worker's operator runs it)."""
    policy = job_spec.get("runPolicy")
    if isinstance(policy, dict):
        policy.pop("managedBy", None)


def priority_class_name(shape: ReplicaSpecShape, job: Job) -> str:
    """The pods' PriorityClass as upstream picks it: runPolicy.schedulingPolicy.priorityClass,
    else the first replica type (in Kueue's order) whose template names one."""
    scheduling = section(run_policy(job), "schedulingPolicy")
    name = scheduling.get("priorityClass")
    if isinstance(name, str) and name:
        return name
    specs = shape.replica_specs(job)
    for replica_type in shape.present_types(job):
        template_spec = section(pod_template(specs[replica_type]), "spec")
        value = template_spec.get("priorityClassName")
        if isinstance(value, str) and value:
            return value
    return ""


# -- pod sets -----------------------------------------------------------------------------
def pod_sets(shape: ReplicaSpecShape, job: Job) -> list[PodSet]:
    """The job's pod sets (see module docstring).

    Raises `InvalidTopologyRequest` when a template's topology annotations are wrong."""
    specs = shape.replica_specs(job)
    out: list[PodSet] = []
    for replica_type in shape.present_types(job):
        replica_spec = specs[replica_type]
        template = fold_duplicate_env(pod_template(replica_spec))
        out.append(
            PodSet(
                name=pod_set_name(replica_type),
                template=template,
                count=replicas(replica_spec),
                topology_request=topology_request_from_template(
                    template, pod_index_label=shape.replica_index_label
                ),
            )
        )
    return out


# -- start and stop -----------------------------------------------------------------------
def _mutable_specs(shape: ReplicaSpecShape, job: dict[str, Any]) -> dict[str, Any]:
    specs = job.setdefault("spec", {}).setdefault(shape.replica_specs_field, {})
    return specs if isinstance(specs, dict) else {}


def start(
    shape: ReplicaSpecShape,
    job: Job,
    workload: Workload,
    flavors: Mapping[str, ResourceFlavor],
    kind: str,
) -> dict[str, Any]:
    """The job as it should be to run under `workload`'s admission.

    Raises `InvalidPodSetInfo` when the admission's pod sets are not the job's replica
    types or a template conflicts, `MissingFlavor` while a flavor is not cached yet."""
    infos = {info.name: info for info in infos_from_admission(workload, flavors)}
    started: dict[str, Any] = copy.deepcopy(dict(job))
    types = shape.present_types(started)
    names = [pod_set_name(t) for t in types]
    if sorted(names) != sorted(infos):
        raise InvalidPodSetInfo(
            f"the admission has pod sets {sorted(infos)}, the {kind} replica types {names}"
        )
    specs = _mutable_specs(shape, started)
    for replica_type in types:
        replica_spec = specs[replica_type]
        info = infos[pod_set_name(replica_type)]
        replica_spec["template"] = merge_into_template(replica_spec.get("template") or {}, info)
    started["spec"].setdefault("runPolicy", {})["suspend"] = False
    return started


def _stopped(shape: ReplicaSpecShape, job: Job, workload: Workload | None) -> dict[str, Any]:
    stopped: dict[str, Any] = copy.deepcopy(dict(job))
    set_suspend(stopped)
    if workload is None:
        return stopped
    recorded = {pod_set.name: pod_set.template for pod_set in workload.spec.pod_sets}
    types = shape.present_types(stopped)
    if sorted(pod_set_name(t) for t in types) != sorted(recorded):
        return stopped  # not this job's record: upstream skips the restore too
    specs = _mutable_specs(shape, stopped)
    for replica_type in types:
        replica_spec = specs[replica_type]
        replica_spec["template"] = restore_template(
            replica_spec.get("template") or {}, recorded[pod_set_name(replica_type)]
        )
    return stopped


def plan_stop(shape: ReplicaSpecShape, job: Job, workload: Workload | None) -> list[JobWrite]:
    """The one write that suspends the job and restores its templates (or nothing)."""
    after = _stopped(shape, job, workload)
    patch = diff(job, after)
    if not patch:
        return []
    return [JobWrite(JobSubresource.MAIN, patch, after)]


# -- status -------------------------------------------------------------------------------
def _conditions(job: Job) -> list[Mapping[str, Any]]:
    return [c for c in status(job).get("conditions") or () if isinstance(c, Mapping)]


def finished(job: Job) -> JobFinish | None:
    """The first True Succeeded or Failed condition, in the order the operator wrote them
    (upstream reads them that way); the operator's own run policy (backoffLimit,
    activeDeadlineSeconds, successPolicy) decides when that is."""
    for condition in _conditions(job):
        kind = condition.get("type")
        if kind in (SUCCEEDED, FAILED) and condition.get("status") == "True":
            reason = WorkloadReason.SUCCEEDED if kind == SUCCEEDED else WorkloadReason.FAILED
            return JobFinish(reason=reason, message=str(condition.get("message") or ""))
    return None


def is_active(job: Job) -> bool:
    statuses = section(status(job), "replicaStatuses")
    return any(
        isinstance(item, Mapping) and (int_value(item.get("active")) or 0) != 0
        for item in statuses.values()
    )


def pods_ready(job: Job) -> bool:
    """Ready once the operator says Running (upstream's reading: it counts no pods)."""
    return any(c.get("type") == RUNNING and c.get("status") == "True" for c in _conditions(job))

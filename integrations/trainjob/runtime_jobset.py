"""The replicated jobs of the JobSet Trainer v2.0 builds for a TrainJob, from its runtime.

Trainer does not copy pod templates into the TrainJob: it builds a JobSet from the
referenced (Cluster)TrainingRuntime's `spec.template` and the TrainJob's own fields. What
Kueue needs of that JobSet (names, counts, pod templates) is rebuilt here the way Trainer
builds it, so the Workload can be queued before the JobSet exists:
- one replicated job per runtime replicated job, in order, with its name;
- replicas 1 for the trainer and initializer jobs (Trainer forces it), the runtime's
  (default 1) for others;
- pods per replica = parallelism = completions: the runtime's parallelism (default 1);
  for the trainer job `mlPolicy.numNodes` (default 1), replaced by the TrainJob's
  `trainer.numNodes` (with an MPI policy that number goes to the `node` job, one less
  when the launcher runs as a node);
- the pod template: the runtime's, with the user's `podSpecOverrides` merged in order
  (Kueue's own are left out: they are admission's, not the job's ask), then the
  TrainJob's trainer image, command, args, resourcesPerNode and env on the trainer's
  `node` container.
Environment Trainer derives for torchrun or MPI is not rebuilt: it changes no request.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from integrations.framework.job_metadata import Job, int_value, section
from integrations.trainjob import trainjob_fields as fields
from integrations.trainjob.pod_spec_override import apply_override, merge_by_key, targets


@dataclass(frozen=True, slots=True)
class ReplicatedJob:
    """One replicated job of the TrainJob's JobSet, as far as Kueue needs it."""

    name: str
    replicas: int
    pods_per_replica: int
    template: dict[str, Any]

    @property
    def pods(self) -> int:
        return self.replicas * self.pods_per_replica


def _ancestor(runtime_job: Mapping[str, Any]) -> str | None:
    labels = section(section(section(runtime_job, "template"), "metadata"), "labels")
    value = labels.get(fields.ANCESTOR_LABEL)
    return None if value is None else str(value)


def _pods_per_replica(
    runtime_job: Mapping[str, Any],
    ancestor: str | None,
    ml_policy: Mapping[str, Any] | None,
    job: Job,
) -> int:
    parallelism = int_value(section(section(runtime_job, "template"), "spec").get("parallelism"))
    count = 1 if parallelism is None else parallelism
    if ancestor == fields.ANCESTOR_TRAINER and ml_policy is not None:
        count = int_value(ml_policy.get("numNodes")) or 1
    nodes = fields.num_nodes(job)
    if nodes is None:
        return count
    mpi = section(ml_policy or {}, "mpi")
    if ml_policy is not None and ml_policy.get("mpi") is not None:
        if runtime_job.get("name") == fields.NODE:
            return max(nodes - 1, 1) if mpi.get("runLauncherAsNode") is True else nodes
        return count
    return nodes if ancestor == fields.ANCESTOR_TRAINER else count


def _with_trainer_fields(pod_spec: dict[str, Any], job: Job) -> None:
    trainer = fields.trainer_spec(job)
    if not trainer:
        return
    for container in pod_spec.get("containers") or ():
        if not isinstance(container, dict) or container.get("name") != fields.NODE:
            continue
        for key in ("image", "command", "args"):
            if trainer.get(key) is not None:
                container[key] = copy.deepcopy(trainer[key])
        resources = section(trainer, "resourcesPerNode")
        if resources.get("limits") or resources.get("requests"):
            container["resources"] = {
                key: copy.deepcopy(dict(resources[key]))
                for key in ("limits", "requests")
                if resources.get(key)
            }
        if trainer.get("env"):
            container["env"] = merge_by_key(container.get("env") or [], trainer["env"], "name")


def replicated_jobs(job: Job, runtime_spec: Mapping[str, Any]) -> list[ReplicatedJob]:
    """The TrainJob's replicated jobs under `runtime_spec` (see module docstring)."""
    template_spec = section(section(runtime_spec, "template"), "spec")
    ml_policy_value = runtime_spec.get("mlPolicy")
    ml_policy = ml_policy_value if isinstance(ml_policy_value, Mapping) else None
    overrides = fields.user_overrides(job)
    out: list[ReplicatedJob] = []
    for runtime_job in template_spec.get("replicatedJobs") or ():
        if not isinstance(runtime_job, Mapping):
            continue
        name = str(runtime_job.get("name", ""))
        ancestor = _ancestor(runtime_job)
        job_spec = section(section(runtime_job, "template"), "spec")
        template: dict[str, Any] = copy.deepcopy(dict(section(job_spec, "template")))
        pod_spec: dict[str, Any] = dict(section(template, "spec"))
        for override in overrides:
            if name in targets(override):
                pod_spec = apply_override(pod_spec, override)
        if ancestor == fields.ANCESTOR_TRAINER:
            _with_trainer_fields(pod_spec, job)
        template["spec"] = pod_spec
        forced_single = ancestor in (
            fields.ANCESTOR_TRAINER,
            fields.ANCESTOR_DATASET_INITIALIZER,
            fields.ANCESTOR_MODEL_INITIALIZER,
        )
        replicas = int_value(runtime_job.get("replicas"))
        out.append(
            ReplicatedJob(
                name=name,
                replicas=1 if forced_single or replicas is None else replicas,
                pods_per_replica=_pods_per_replica(runtime_job, ancestor, ml_policy, job),
                template=template,
            )
        )
    return out

"""KubeRay's ray.io/v1 RayJob and RayCluster, as tests submit them (upstream:
`testingjobs/rayjob`, `testingjobs/raycluster`).

Both carry a RayCluster spec (a RayJob in `spec.rayClusterSpec`): `head(template)` and
`worker_group(name, replicas, template)` set it from `PodTemplate`s. `kwok_rayjob` is
devfleet's `gpu_rayjob` (the demo's RayJob) as a builder.
"""

from __future__ import annotations

from typing import Any, Self

from tests.builders.base import MULTIKUEUE_CONTROLLER, QUEUE_LABEL, Json, ObjectBuilder
from tests.builders.pod import PodTemplate, template_of


class _ClusterSpecMethods(ObjectBuilder):
    def _cluster(self) -> Json:
        raise NotImplementedError

    def head(self, template: PodTemplate | Json) -> Self:
        self._cluster()["headGroupSpec"] = {"rayStartParams": {}, "template": template_of(template)}
        return self

    def worker_group(
        self, name: str, replicas: int | None, template: PodTemplate | Json, **more: Any
    ) -> Self:
        group: Json = {"groupName": name, "rayStartParams": {}, "template": template_of(template)}
        if replicas is not None:
            group["replicas"] = replicas
        group.update(more)
        self._cluster().setdefault("workerGroupSpecs", []).append(group)
        return self

    def autoscaling(self, enabled: bool = True) -> Self:
        self._cluster()["enableInTreeAutoscaling"] = enabled
        return self

    def queue(self, local_queue: str) -> Self:
        return self.label(QUEUE_LABEL, local_queue)

    def managed_by(self, controller: str = MULTIKUEUE_CONTROLLER) -> Self:
        return self.spec(managedBy=controller)


class RayCluster(_ClusterSpecMethods):
    """A RayCluster with a head of one container `ray-head` and no worker groups."""

    api_version = "ray.io/v1"
    kind = "RayCluster"

    def __init__(self, name: str, namespace: str | None = None) -> None:
        super().__init__(name, namespace)
        self._obj["spec"] = {}
        self.head(PodTemplate("ray-head", restart_policy=None))

    def _cluster(self) -> Json:
        spec: Json = self._obj["spec"]
        return spec

    def suspend(self, suspended: bool = True) -> Self:
        return self.spec(suspend=suspended)


class RayJob(_ClusterSpecMethods):
    """A RayJob that deletes its cluster when done, with a head and no worker groups."""

    api_version = "ray.io/v1"
    kind = "RayJob"

    def __init__(self, name: str, namespace: str | None = None) -> None:
        super().__init__(name, namespace)
        self._obj["spec"] = {
            "entrypoint": "python /home/ray/train.py",
            "shutdownAfterJobFinishes": True,
            "rayClusterSpec": {},
        }
        self.head(PodTemplate("ray-head", restart_policy=None))

    def _cluster(self) -> Json:
        cluster: Json = self._obj["spec"]["rayClusterSpec"]
        return cluster

    def suspend(self, suspended: bool = True) -> Self:
        return self.spec(suspend=suspended)

    def submission_mode(self, mode: str) -> Self:
        return self.spec(submissionMode=mode)

    def submitter(self, template: PodTemplate | Json) -> Self:
        return self.spec(submitterPodTemplate=template_of(template))

    def shutdown_after_finishes(self, shutdown: bool) -> Self:
        return self.spec(shutdownAfterJobFinishes=shutdown)

    def cluster_selector(self, selector: dict[str, str]) -> Self:
        self._obj["spec"].pop("rayClusterSpec", None)
        return self.spec(clusterSelector=selector)


def kwok_rayjob(name: str, *, workers: int, gpus_per_worker: int, run_seconds: float) -> RayJob:
    """`devfleet.sample_jobs.gpu_rayjob` as a builder."""
    from devfleet.sample_jobs import gpu_rayjob

    return RayJob.from_obj(
        gpu_rayjob(name, workers=workers, gpus_per_worker=gpus_per_worker, run_seconds=run_seconds)
    )

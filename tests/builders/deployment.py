"""apps/v1 Deployments, as tests submit them (upstream: `testingdeployment`).

A Deployment of `replicas` Pods from one template (the pod template methods act on it),
selected by the label `app: <name>`.
"""

from __future__ import annotations

from typing import Self

from tests.builders.base import PRIORITY_CLASS_LABEL, QUEUE_LABEL, Json, ObjectBuilder
from tests.builders.pod import POD_IMAGE, PodTemplateMethods


class Deployment(PodTemplateMethods, ObjectBuilder):
    """A Deployment of one container `c`; its pods carry `app: <name>`."""

    api_version = "apps/v1"
    kind = "Deployment"

    def __init__(self, name: str, namespace: str | None = None, *, replicas: int = 1) -> None:
        super().__init__(name, namespace)
        self._obj["spec"] = {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": POD_IMAGE}]},
            },
        }

    def _pod_template(self) -> Json:
        template: Json = self._obj["spec"]["template"]
        return template

    def replicas(self, count: int) -> Self:
        return self.spec(replicas=count)

    def queue(self, local_queue: str) -> Self:
        return self.label(QUEUE_LABEL, local_queue)

    def priority_class(self, workload_priority_class: str) -> Self:
        return self.label(PRIORITY_CLASS_LABEL, workload_priority_class)


def kwok_inference(name: str, *, replicas: int, gpus: int = 1, cpu: str = "1") -> Deployment:
    """A small inference Deployment kwok runs until it is scaled down: `replicas` Pods of
    `cpu` CPU, 1Gi and `gpus` GPUs (a limit, as the Job builders give GPUs)."""
    deployment = Deployment(name, replicas=replicas).requests({"cpu": cpu, "memory": "1Gi"})
    if gpus:
        deployment.limit("nvidia.com/gpu", str(gpus))
    return deployment

"""apps/v1 StatefulSets, as tests submit them (upstream: `testingstatefulset`)."""

from __future__ import annotations

from typing import Self

from tests.builders.base import PRIORITY_CLASS_LABEL, QUEUE_LABEL, Json, ObjectBuilder
from tests.builders.pod import POD_IMAGE, PodTemplateMethods


class StatefulSet(PodTemplateMethods, ObjectBuilder):
    """A StatefulSet of one container `c`; its pods carry `app: <name>`; Pods are made in
    parallel (podManagementPolicy Parallel) unless a test asks for OrderedReady."""

    api_version = "apps/v1"
    kind = "StatefulSet"

    def __init__(self, name: str, namespace: str | None = None, *, replicas: int = 1) -> None:
        super().__init__(name, namespace)
        self._obj["spec"] = {
            "replicas": replicas,
            "serviceName": name,
            "podManagementPolicy": "Parallel",
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

    def ordered_ready(self) -> Self:
        return self.spec(podManagementPolicy="OrderedReady")

    def queue(self, local_queue: str) -> Self:
        return self.label(QUEUE_LABEL, local_queue)

    def priority_class(self, workload_priority_class: str) -> Self:
        return self.label(PRIORITY_CLASS_LABEL, workload_priority_class)

"""leaderworkerset.x-k8s.io/v1 LeaderWorkerSets, as tests submit them (upstream:
`testingleaderworkerset`)."""

from __future__ import annotations

import copy
from typing import Self

from tests.builders.base import PRIORITY_CLASS_LABEL, QUEUE_LABEL, Json, ObjectBuilder
from tests.builders.pod import POD_IMAGE, PodTemplateMethods


class LeaderWorkerSet(PodTemplateMethods, ObjectBuilder):
    """`replicas` groups of `size` Pods of one container `c`, labelled `app: <name>`. Pod
    template methods edit the worker template; `leader()` gives the set a leader template
    (a copy of the worker template as it is then)."""

    api_version = "leaderworkerset.x-k8s.io/v1"
    kind = "LeaderWorkerSet"

    def __init__(
        self, name: str, namespace: str | None = None, *, replicas: int = 1, size: int = 1
    ) -> None:
        super().__init__(name, namespace)
        self._obj["spec"] = {
            "replicas": replicas,
            "leaderWorkerTemplate": {
                "size": size,
                "workerTemplate": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "c", "image": POD_IMAGE}]},
                },
            },
        }

    def _pod_template(self) -> Json:
        template: Json = self._obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]
        return template

    def leader(self) -> Self:
        template = self._obj["spec"]["leaderWorkerTemplate"]
        template["leaderTemplate"] = copy.deepcopy(template["workerTemplate"])
        return self

    def replicas(self, count: int) -> Self:
        return self.spec(replicas=count)

    def queue(self, local_queue: str) -> Self:
        return self.label(QUEUE_LABEL, local_queue)

    def priority_class(self, workload_priority_class: str) -> Self:
        return self.label(PRIORITY_CLASS_LABEL, workload_priority_class)

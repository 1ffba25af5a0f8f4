"""Pod templates: the part of a Job, a Workload's pod set (or a JobSet's jobs) that pods
are made from. `PodTemplateMethods` edits one template in place wherever a builder keeps
it; `PodTemplate` is a free-standing one to hand to `Job.template` or `Workload.pod_set`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Self

from devfleet.kwok_stages import RUN_DURATION_ANNOTATION, RUN_JITTER_ANNOTATION
from tests.builders.base import QUEUE_LABEL, DictBuilder, Json, ObjectBuilder, without_none

POD_IMAGE = "registry.invalid/x"
"""Never pulled: on a lite fleet nothing runs pods, on kwok nodes pods are faked."""

KWOK_RUN_ANNOTATION = RUN_DURATION_ANNOTATION
KWOK_JITTER_ANNOTATION = RUN_JITTER_ANNOTATION

Quantity = str | int


class PodTemplateMethods:
    """Fluent edits of one pod template; a class says where it is by `_pod_template()`.

    Container methods act on the first container unless `container=` names an index.
    """

    def _pod_template(self) -> Json:
        raise NotImplementedError

    def _pod_spec(self) -> Json:
        spec: Json = self._pod_template().setdefault("spec", {})
        return spec

    def _container(self, index: int) -> Json:
        container: Json = self._pod_spec()["containers"][index]
        return container

    def _resources(self, kind: str, index: int) -> Json:
        resources: Json = self._container(index).setdefault("resources", {})
        found: Json = resources.setdefault(kind, {})
        return found

    def restart_policy(self, policy: str | None) -> Self:
        """`None` removes the field (templates that never set it)."""
        if policy is None:
            self._pod_spec().pop("restartPolicy", None)
        else:
            self._pod_spec()["restartPolicy"] = policy
        return self

    def node_selector(self, selector: Mapping[str, str]) -> Self:
        """Merge into the nodeSelector; `node_selector({})` writes an empty one."""
        self._pod_spec().setdefault("nodeSelector", {}).update(selector)
        return self

    def toleration(
        self,
        key: str,
        value: str | None = None,
        *,
        effect: str | None = None,
        operator: str | None = None,
    ) -> Self:
        """Append a toleration: `Equal` to `value` when one is given, else `Exists`."""
        operator = operator or ("Equal" if value else "Exists")
        entry = without_none(key=key, operator=operator, value=value, effect=effect)
        self._pod_spec().setdefault("tolerations", []).append(entry)
        return self

    def add_container(self, name: str, image: str | None = POD_IMAGE) -> Self:
        """Append a container (`image=None`: none, for templates that are only decoded)."""
        self._pod_spec().setdefault("containers", []).append(without_none(name=name, image=image))
        return self

    def image(self, image: str, *, container: int = 0) -> Self:
        self._container(container)["image"] = image
        return self

    def command(self, *command: str, container: int = 0) -> Self:
        self._container(container)["command"] = list(command)
        return self

    def request(self, resource: str, quantity: Quantity, *, container: int = 0) -> Self:
        self._resources("requests", container)[resource] = quantity
        return self

    def requests(self, requests: Mapping[str, Quantity], *, container: int = 0) -> Self:
        """Merge into the container's requests; `requests({})` writes an empty map."""
        self._resources("requests", container).update(requests)
        return self

    def limit(self, resource: str, quantity: Quantity, *, container: int = 0) -> Self:
        self._resources("limits", container)[resource] = quantity
        return self

    def pod_annotation(self, key: str, value: str) -> Self:
        self._pod_template().setdefault("metadata", {}).setdefault("annotations", {})[key] = value
        return self

    def pod_label(self, key: str, value: str) -> Self:
        self._pod_template().setdefault("metadata", {}).setdefault("labels", {})[key] = value
        return self

    def kwok_run(self, seconds: float, *, exact: bool = True) -> Self:
        """How long kwok keeps the pods Running before they succeed (kwok's general pod
        stages read these annotations). `exact` also sets the jitter delay to the same
        value: without it kwok draws up to 5 s, which caps longer runs."""
        self.pod_annotation(KWOK_RUN_ANNOTATION, f"{seconds:g}s")
        if exact:
            self.pod_annotation(KWOK_JITTER_ANNOTATION, f"{seconds:g}s")
        return self


class PodTemplate(PodTemplateMethods, DictBuilder):
    """A pod template dict: by default one container `c` on an image nobody pulls, and
    restartPolicy Never (what Job pods need). `image=None` / `restart_policy=None` leave
    those fields out, for objects that are only ever decoded."""

    def __init__(
        self,
        container: str = "c",
        image: str | None = POD_IMAGE,
        *,
        restart_policy: str | None = "Never",
    ) -> None:
        self._obj = {"spec": without_none(restartPolicy=restart_policy)}
        self.add_container(container, image)

    def _pod_template(self) -> Json:
        return self._obj


def template_of(template: PodTemplate | Mapping[str, Any]) -> Json:
    """A fresh template dict from a builder or a ready-made dict."""
    if isinstance(template, PodTemplate):
        return template.obj()
    return copy.deepcopy(dict(template))


class Pod(PodTemplateMethods, ObjectBuilder):
    """A plain v1 Pod (upstream: `testingpod`): one container `c`, restartPolicy Never.

    The pod template methods act on the Pod itself (a Pod is its own template), so
    `request`, `node_selector`, `kwok_run` and `pod_label` work as on a Job's template.
    """

    api_version = "v1"
    kind = "Pod"

    def __init__(self, name: str, namespace: str | None = None) -> None:
        super().__init__(name, namespace)
        self._obj["spec"] = {"restartPolicy": "Never"}
        self.add_container("c")

    def _pod_template(self) -> Json:
        return self._obj

    def queue(self, local_queue: str) -> Self:
        return self.label(QUEUE_LABEL, local_queue)

    def gate(self, name: str) -> Self:
        self._pod_spec().setdefault("schedulingGates", []).append({"name": name})
        return self

    def phase(self, phase: str) -> Self:
        return self.status(phase=phase)

    def group(self, name: str, total_count: int) -> Self:
        """Upstream's pod-group label and total-count annotation."""
        return self.label(POD_GROUP_NAME_LABEL, name).annotation(
            POD_GROUP_TOTAL_COUNT_ANNOTATION, str(total_count)
        )


POD_GROUP_NAME_LABEL = "kueue.x-k8s.io/pod-group-name"
POD_GROUP_TOTAL_COUNT_ANNOTATION = "kueue.x-k8s.io/pod-group-total-count"


def kwok_pod(name: str, *, gpus: int = 0, cpu: str = "1", run_seconds: float = 5) -> Pod:
    """A Pod kwok runs for `run_seconds` then marks Succeeded, asking for `cpu` (and
    `gpus` nvidia.com/gpu)."""
    pod = Pod(name).request("cpu", cpu).request("memory", "1Gi").kwok_run(run_seconds)
    if gpus:
        pod.limit("nvidia.com/gpu", str(gpus))
    return pod

"""Namespace LimitRange defaults and RuntimeClass overhead, counted in a pod's requests.

A pod template often leaves requests out: the kubelet's pod gets them later from the
namespace's LimitRange (`defaultRequest`, or `default` limits standing in for requests) and
its RuntimeClass's overhead. Upstream Kueue counts what the pods will really ask for by
adjusting a copy of each Workload's pod templates before it counts them
(pkg/workload/resources.go `AdjustResources`), in this order:

1. RuntimeClass overhead: a template that names a `runtimeClassName` and sets no `overhead`
   of its own gets the class's `overhead.podFixed` (a class that does not exist, or has no
   overhead, adds nothing: the pod's admission would settle that).
2. LimitRange defaults (pkg/util/limitrange `Summarize`): over the namespace's LimitRanges,
   in name order, the first to set a resource's `default` or `defaultRequest` wins. Every
   container and init container (sidecars too) takes the Container-type `default` for each
   limit it leaves unset and `defaultRequest` for each request it leaves unset; pod-level
   `resources`, where the template has them, take the Pod-type ones likewise.
3. Then the usual rules (`pod_templates.pod_requests`): a limit stands in for a missing
   request, init containers count by their peak, sidecars and overhead add up.

The Workload object is never changed, only the engine's count of it, and only while it
waits: upstream adjusts a Workload as it is queued (or requeued), so a change of a
LimitRange or a RuntimeClass re-counts pending Workloads, while an admission keeps what
it was admitted with (its usage comes from `status.admission`).

The template is kept as the resource parts it was written with (`resource_view`); an
adjusted copy of those parts goes through `pod_requests`, so there is one definition of
how a pod's requests add up. Quantities stay as written, as in any pod template.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from core.api.json_types import Json
from core.engine.pod_templates import pod_requests

Quantities = Mapping[str, Any]
"""Resource name → quantity as written in a manifest (`"500m"`, `"1Gi"`, `2`)."""

_CONTAINER_GROUPS = ("initContainers", "containers")


@dataclass(frozen=True, slots=True, kw_only=True)
class LimitRange:
    """The defaults one LimitRange gives (its Container- and Pod-type items)."""

    namespace: str
    name: str
    container_default: Quantities = field(default_factory=dict)
    container_default_request: Quantities = field(default_factory=dict)
    pod_default: Quantities = field(default_factory=dict)
    pod_default_request: Quantities = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeClass:
    """A node.k8s.io RuntimeClass; `overhead` is its `overhead.podFixed` (None: unset)."""

    name: str
    overhead: Quantities | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class NamespaceDefaults:
    """What a namespace's LimitRanges add up to (`Summarize`: the first setter wins)."""

    container_default: Quantities = field(default_factory=dict)
    container_default_request: Quantities = field(default_factory=dict)
    pod_default: Quantities = field(default_factory=dict)
    pod_default_request: Quantities = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (
            self.container_default
            or self.container_default_request
            or self.pod_default
            or self.pod_default_request
        )


NO_DEFAULTS = NamespaceDefaults()


def _keep_first(first: Quantities, second: Quantities) -> dict[str, Any]:
    """Upstream's MergeResourceListKeepFirst: `first`, plus what only `second` names."""
    merged = dict(second)
    merged.update(first)
    return merged


def summarize(limit_ranges: Iterable[LimitRange]) -> NamespaceDefaults:
    """The defaults of a namespace's LimitRanges, taken in name order."""
    summary = NO_DEFAULTS
    for lr in sorted(limit_ranges, key=lambda lr: lr.name):
        summary = NamespaceDefaults(
            container_default=_keep_first(summary.container_default, lr.container_default),
            container_default_request=_keep_first(
                summary.container_default_request, lr.container_default_request
            ),
            pod_default=_keep_first(summary.pod_default, lr.pod_default),
            pod_default_request=_keep_first(summary.pod_default_request, lr.pod_default_request),
        )
    return summary


def resource_view(spec: Json) -> Json:
    """The parts of a PodSpec that its requests depend on, as written (shared, not copied)."""
    view: dict[str, Any] = {}
    for group in _CONTAINER_GROUPS:
        containers = spec.get(group)
        if containers:
            view[group] = [
                {key: container[key] for key in ("resources", "restartPolicy") if key in container}
                for container in containers
            ]
    for key in ("overhead", "runtimeClassName", "resources"):
        if spec.get(key) is not None:
            view[key] = spec[key]
    return view


def _with_defaults(resources: Json | None, limits: Quantities, requests: Quantities) -> Json:
    current = resources or {}
    out = dict(current)
    if limits:
        out["limits"] = _keep_first(current.get("limits") or {}, limits)
    if requests:
        out["requests"] = _keep_first(current.get("requests") or {}, requests)
    return out


def adjusted_view(
    view: Json, defaults: NamespaceDefaults, runtime_classes: Mapping[str, RuntimeClass]
) -> Json:
    """`view` as upstream's AdjustResources leaves it (steps 1 and 2 of the docstring)."""
    out = dict(view)
    class_name = view.get("runtimeClassName")
    if class_name and not view.get("overhead"):
        runtime_class = runtime_classes.get(str(class_name))
        if runtime_class is not None and runtime_class.overhead is not None:
            out["overhead"] = runtime_class.overhead
    if defaults.container_default or defaults.container_default_request:
        for group in _CONTAINER_GROUPS:
            if group in view:
                out[group] = [
                    {
                        **container,
                        "resources": _with_defaults(
                            container.get("resources"),
                            defaults.container_default,
                            defaults.container_default_request,
                        ),
                    }
                    for container in view[group]
                ]
    if view.get("resources") is not None and (defaults.pod_default or defaults.pod_default_request):
        out["resources"] = _with_defaults(
            view["resources"], defaults.pod_default, defaults.pod_default_request
        )
    return out


def needs_adjusting(
    view: Json | None, defaults: NamespaceDefaults, runtime_classes: Mapping[str, RuntimeClass]
) -> bool:
    """Whether anything could change the template's count (the common case is no)."""
    if view is None:
        return False
    return not defaults.empty or (
        bool(view.get("runtimeClassName")) and not view.get("overhead") and bool(runtime_classes)
    )


def adjusted_requests(
    view: Json, defaults: NamespaceDefaults, runtime_classes: Mapping[str, RuntimeClass]
) -> dict[str, int]:
    """Effective per-pod requests of a template once defaults and overhead are applied."""
    return pod_requests(adjusted_view(view, defaults, runtime_classes))

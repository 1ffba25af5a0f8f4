"""From an opaque pod template (a dict, as in `podSets[].template`) to what quota needs.

The engine never types a whole PodSpec. It needs four things from a template: the
effective requests of one pod, its nodeSelector, its required node affinity and its
tolerations. Effective requests follow Kubernetes' rules:

- a container's limit stands in for a missing request of the same resource (the
  apiserver defaults it that way, and Kueue copies limits likewise);
- regular init containers run one at a time, so they count by their maximum, each on top
  of the restartable (sidecar) init containers started before it;
- sidecars (`restartPolicy: Always` init containers) run beside the app containers and add
  to their sum;
- pod `overhead` is added; pod-level `resources.requests` replace the computed value of
  the resources they name;
- a resource whose effective request is negative is not counted at all.

The resource lists are also checked (`resource_validation`): requests above limits or
negative quantities make the pod set, and so its workload, inadmissible.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from core.api.json_types import Json
from core.engine.model import NodeSelectorTerm, PodSet, SelectorRequirement, Toleration
from core.engine.quantity import to_base_units
from core.engine.resource_validation import template_resource_problems


def _container_requests(container: Json) -> dict[str, int]:
    resources = container.get("resources") or {}
    requests = resources.get("requests") or {}
    limits = resources.get("limits") or {}
    out: dict[str, int] = {}
    for name, qty in limits.items():
        out[name] = to_base_units(name, qty)
    for name, qty in requests.items():
        out[name] = to_base_units(name, qty)
    return out


def _add_into(total: dict[str, int], extra: Mapping[str, int]) -> None:
    for name, value in extra.items():
        total[name] = total.get(name, 0) + value


def _max_into(total: dict[str, int], other: Mapping[str, int]) -> None:
    for name, value in other.items():
        if value > total.get(name, 0):
            total[name] = value


def pod_requests(spec: Json) -> dict[str, int]:
    """Effective requests of one pod with this PodSpec, in engine base units."""
    apps: dict[str, int] = {}
    for container in spec.get("containers") or ():
        _add_into(apps, _container_requests(container))

    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for container in spec.get("initContainers") or ():
        requests = _container_requests(container)
        if container.get("restartPolicy") == "Always":
            _add_into(sidecars, requests)
            # A sidecar's start is itself a step that must fit beside earlier sidecars.
            _max_into(init_peak, sidecars)
        else:
            step = dict(sidecars)
            _add_into(step, requests)
            _max_into(init_peak, step)

    total = dict(apps)
    _add_into(total, sidecars)
    _max_into(total, init_peak)

    # Pod-level requests replace the containers' sum; the overhead comes on top of
    # whichever applies (as Kubernetes' resource helpers compute a pod's requests).
    pod_level = (spec.get("resources") or {}).get("requests") or {}
    for name, qty in pod_level.items():
        total[name] = to_base_units(name, qty)

    overhead = spec.get("overhead") or {}
    _add_into(total, {name: to_base_units(name, qty) for name, qty in overhead.items()})
    # A negative request never counts (as upstream's FloorToZero): it would give back
    # quota that admitted workloads hold. Such a pod set is inadmissible anyway (see
    # resource_validation); this keeps every sum over requests honest.
    return {name: value for name, value in total.items() if value > 0}


def _requirements(items: Iterable[Json]) -> tuple[SelectorRequirement, ...]:
    return tuple(
        SelectorRequirement(
            key=item.get("key", ""),
            operator=item.get("operator", "In"),
            values=tuple(str(v) for v in item.get("values") or ()),
        )
        for item in items
    )


def required_node_affinity(spec: Json) -> tuple[NodeSelectorTerm, ...]:
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    return tuple(
        NodeSelectorTerm(match_expressions=_requirements(term.get("matchExpressions") or ()))
        for term in affinity.get("nodeSelectorTerms") or ()
    )


def tolerations(spec: Json) -> tuple[Toleration, ...]:
    out = []
    for item in spec.get("tolerations") or ():
        out.append(
            Toleration(
                key=item.get("key", "") or "",
                operator=item.get("operator", "Equal") or "Equal",
                value=str(item.get("value", "") or ""),
                effect=item.get("effect", "") or "",
                toleration_seconds=item.get("tolerationSeconds"),
            )
        )
    return tuple(out)


def pod_set_from_template(
    *, name: str, count: int, template: Json, min_count: int | None = None
) -> PodSet:
    """A PodSet with everything the engine reads from a pod template."""
    spec = template.get("spec") or {}
    return PodSet(
        name=name,
        count=count,
        min_count=min_count,
        requests=pod_requests(spec),
        node_selector=dict(spec.get("nodeSelector") or {}),
        required_node_affinity=required_node_affinity(spec),
        tolerations=tolerations(spec),
        resource_problems=template_resource_problems(spec),
    )

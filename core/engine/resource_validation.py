"""Resource lists of a pod template that make a workload inadmissible.

Upstream's scheduler refuses, before any flavor is tried, a workload whose container
requests exceed its limits (`ValidateResources` in pkg/workload/resources.go; the
workload stays pending with "resources validation failed: ..."). fleetq adds negative
quantities to the same check: the API refuses them (upstream's webhook rule, see
`core.api.validation.workload`), but a Workload stored before that rule, or written past
the webhook, must still never be admitted, because its negative request would give back
quota it never held. The quantities themselves are floored at zero where quota is
counted (`pod_templates.pod_requests`), so usage never drops below what admitted
workloads hold even if such a workload was admitted elsewhere and is adopted here.

Problems are texts in the apiserver's field-error format, relative to the pod set's
`template.spec`; `resource_validation_message` places them under their pod set.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Final

from core.api.json_types import Json
from core.engine.quantity import parse_quantity, to_base_units

REQUESTS_EXCEED_LIMITS: Final = "requests must not exceed its limits"
RESOURCES_INVALID: Final = "resources validation failed"
NEGATIVE_QUANTITY: Final = "must be greater than or equal to 0"

_LISTS: Final = ("requests", "limits")


def _resource_owners(spec: Json) -> Iterable[tuple[str, str, Mapping[str, Any]]]:
    """(owner path, path of its resources, resources) of every init container, container
    and the pod itself, in upstream's order."""
    for group in ("initContainers", "containers"):
        for position, container in enumerate(spec.get(group) or ()):
            owner = f"{group}[{position}]"
            yield owner, f"{owner}.resources", container.get("resources") or {}
    pod_level = spec.get("resources")
    if pod_level is not None:
        yield "resources", "resources", pod_level


def _negatives(path: str, resources: Mapping[str, Any]) -> list[str]:
    found = []
    for name in _LISTS:
        for resource, quantity in (resources.get(name) or {}).items():
            if parse_quantity(quantity) < 0:
                found.append(
                    f'{path}.{name}[{resource}]: Invalid value: "{quantity}": {NEGATIVE_QUANTITY}'
                )
    return found


def _over_limits(owner: str, resources: Mapping[str, Any]) -> list[str]:
    requests = resources.get("requests") or {}
    limits = resources.get("limits") or {}
    over = sorted(
        resource
        for resource, quantity in requests.items()
        if resource in limits
        and to_base_units(resource, quantity) > to_base_units(resource, limits[resource])
    )
    if not over:
        return []
    shown = json.dumps(over, separators=(",", ":"))
    return [f"{owner}: Invalid value: {shown}: {REQUESTS_EXCEED_LIMITS}"]


def template_resource_problems(spec: Json) -> tuple[str, ...]:
    """What is wrong with the resource lists of one pod spec (empty when nothing is)."""
    problems: list[str] = []
    for owner, path, resources in _resource_owners(spec):
        problems += _negatives(path, resources)
        problems += _over_limits(owner, resources)
    return tuple(problems)


def resource_validation_message(problems_by_pod_set: Iterable[tuple[str, ...]]) -> str | None:
    """The pending message for a workload whose pod sets have these problems (pod sets in
    spec order), worded like upstream's aggregated field errors; None when there are none."""
    errors: list[str] = []
    for position, problems in enumerate(problems_by_pod_set):
        prefix = f"spec.podSets[{position}].template.spec."
        errors += [prefix + problem for problem in problems if prefix + problem not in errors]
    if not errors:
        return None
    shown = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    return f"{RESOURCES_INVALID}: {shown}"

"""Whether a job still asks for what its Workload says, in the fields admission depends on.

The reconciler recreates (or, while suspended, updates) a Workload when its job no longer
matches it. Only what quota and placement depend on counts: pod counts, minCount, the
containers and init containers, and (until admission adds its own) the tolerations.
Labels, annotations and nodeSelector are left out on purpose: admission itself changes
them on a running job.

Values are compared by meaning, as Kubernetes' semantic equality does: "1000m" equals
"1" for a resource quantity, and an absent field equals an empty or zero one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from core.api.quantity import QuantityError, parse_quantity
from core.api.workload import PodSet

__all__ = ["pod_sets_equivalent", "semantic_form"]

_QUANTITY_MAPS = ("requests", "limits")


def _is_empty(value: Any) -> bool:
    return (
        value is None
        or value is False
        or (value == 0 and not isinstance(value, bool))
        or (isinstance(value, str | list | dict) and len(value) == 0)
    )


def _quantity(value: Any) -> Any:
    if isinstance(value, str | int) and not isinstance(value, bool):
        try:
            return parse_quantity(value)
        except QuantityError:
            return value
    return Fraction(value) if isinstance(value, float) else value


def semantic_form(value: Any, *, quantities: bool = False) -> Any:
    """A canonical form of a JSON value: empty fields dropped, quantities as numbers.

    With `quantities`, the values of this mapping are resource quantities.
    """
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if quantities:
                # Every listed resource counts, even a zero one.
                out[key] = _quantity(item)
                continue
            form = semantic_form(item, quantities=key in _QUANTITY_MAPS)
            if not _is_empty(form):
                out[key] = form
        return out
    if isinstance(value, list):
        return [semantic_form(item) for item in value]
    return value


def _spec_field(pod_set: PodSet, name: str) -> Any:
    spec = pod_set.template.get("spec")
    return spec.get(name) if isinstance(spec, Mapping) else None


def _same_spec_field(a: PodSet, b: PodSet, name: str) -> bool:
    return semantic_form({"v": _spec_field(a, name)}) == semantic_form({"v": _spec_field(b, name)})


def _pod_set_equivalent(a: PodSet, b: PodSet, *, ignore_tolerations: bool) -> bool:
    if a.count != b.count or a.min_count != b.min_count:
        return False
    if not ignore_tolerations and not _same_spec_field(a, b, "tolerations"):
        return False
    return _same_spec_field(a, b, "initContainers") and _same_spec_field(a, b, "containers")


def pod_sets_equivalent(
    a: Sequence[PodSet], b: Sequence[PodSet], *, ignore_tolerations: bool
) -> bool:
    """Pairwise equivalence, in order (names are not compared, as upstream)."""
    return len(a) == len(b) and all(
        _pod_set_equivalent(x, y, ignore_tolerations=ignore_tolerations)
        for x, y in zip(a, b, strict=True)
    )

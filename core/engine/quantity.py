"""Kubernetes quantities as the engine counts them, on top of the one parser in core.api.

The engine keeps integers in a resource's base unit (milli-cores for cpu, plain units for
everything else, rounded up as Kubernetes does); `core.api.quantity` does the parsing and
the canonical formatting. This adapter adds only what the engine's callers rely on beyond
it: YAML floats (`cpu: 0.5` in simulator files and manifests) and surrounding blanks are
accepted, and formatting is chosen by resource name instead of by value type.
"""

from __future__ import annotations

from fractions import Fraction

from core.api import quantity as api
from core.api.quantity import MILLI_RESOURCES, QuantityError

__all__ = [
    "MILLI_RESOURCES",
    "QuantityError",
    "format_quantity",
    "parse_quantity",
    "to_base_units",
]

# Resources Kubernetes writes with binary suffixes (Ki..Ei) when they divide evenly.
_BINARY_RESOURCES = frozenset({"memory", "ephemeral-storage"})


def _as_api_input(quantity: str | int | float) -> str | int:
    """What the API parser accepts: floats through their shortest text, blanks trimmed."""
    if isinstance(quantity, bool):
        raise QuantityError(f"not a quantity: {quantity!r}")
    if isinstance(quantity, float):
        return repr(quantity)
    if isinstance(quantity, str):
        return quantity.strip()
    return quantity


def parse_quantity(quantity: str | int | float) -> Fraction:
    """Exact value of a quantity (`"1.5Gi"`, `"100m"`, `"1e3"`, `2`, `0.5`)."""
    return api.parse_quantity(_as_api_input(quantity))


def to_base_units(resource: str, quantity: str | int | float) -> int:
    """Integer amount of `quantity` in the base unit of `resource` (milli for cpu)."""
    return api.resource_amount(resource, _as_api_input(quantity))


def format_quantity(resource: str, amount: int) -> str:
    """Render an engine integer as Kubernetes' canonical quantity string (as in messages)."""
    if resource in MILLI_RESOURCES:
        return str(api.format_quantity(Fraction(amount, 1000)))
    binary = resource in _BINARY_RESOURCES or resource.startswith("hugepages-")
    return str(api.format_quantity(amount, binary=binary))

"""Kubernetes quantities as the engine counts them: integers in a resource's base unit.

CPU is counted in milli-cores (`"1"` → 1000, `"250m"` → 250); every other resource in its
plain unit (bytes for memory, pods, GPUs). Fractions below the base unit round up, as
Kubernetes does for `MilliValue()` / `Value()`, so a request is never under-counted.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from fractions import Fraction
from functools import lru_cache

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}

# Resources counted in thousandths of their unit.
MILLI_RESOURCES = frozenset({"cpu"})


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(text: str | int | float) -> Fraction:
    """Exact value of a quantity (`"1.5Gi"`, `"100m"`, `"1e3"`, `2`)."""
    if isinstance(text, bool):
        raise QuantityError(f"not a quantity: {text!r}")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        return Fraction(Decimal(repr(text)))
    return _parse_text(text.strip())


@lru_cache(maxsize=4096)
def _parse_text(s: str) -> Fraction:
    if not s:
        raise QuantityError("empty quantity")
    number, multiplier = _split_suffix(s)
    try:
        value = Fraction(Decimal(number))
    except (InvalidOperation, ValueError) as exc:
        raise QuantityError(f"not a quantity: {s!r}") from exc
    return value * multiplier


def _split_suffix(s: str) -> tuple[str, Fraction]:
    if len(s) > 2 and s[-2:] in _BINARY:
        return s[:-2], Fraction(_BINARY[s[-2:]])
    last = s[-1]
    if last in _DECIMAL:
        return s[:-1], _DECIMAL[last]
    # Exponent forms ("1e3", "1E3") end in a digit and are understood by Decimal directly.
    return s, Fraction(1)


def _ceil(value: Fraction) -> int:
    return -((-value.numerator) // value.denominator)


def to_base_units(resource: str, quantity: str | int | float) -> int:
    """Integer amount of `quantity` in the base unit of `resource` (milli for cpu)."""
    value = parse_quantity(quantity)
    if resource in MILLI_RESOURCES:
        value *= 1000
    return _ceil(value)


_DECIMAL_SUFFIXES = ((18, "E"), (15, "P"), (12, "T"), (9, "G"), (6, "M"), (3, "k"))
_BINARY_SUFFIXES = ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki")
_BINARY_RESOURCES = frozenset({"memory", "ephemeral-storage"})


def _decimal_si(amount: int) -> str:
    for exponent, suffix in _DECIMAL_SUFFIXES:
        unit = 10**exponent
        if amount % unit == 0:
            return f"{amount // unit}{suffix}"
    return str(amount)


def format_quantity(resource: str, amount: int) -> str:
    """Render an engine integer as Kubernetes' canonical quantity string (as in messages)."""
    if amount == 0:
        return "0"
    if resource in MILLI_RESOURCES:
        if amount % 1000:
            return f"{amount}m"
        return _decimal_si(amount // 1000)
    if resource in _BINARY_RESOURCES or resource.startswith("hugepages-"):
        for suffix in _BINARY_SUFFIXES:
            unit = _BINARY[suffix]
            if amount % unit == 0:
                return f"{amount // unit}{suffix}"
        return str(amount)
    return _decimal_si(amount)

"""Kubernetes resource quantities: kept as text in API objects, parsed exactly on demand.

A quantity travels as a string (or a bare JSON number, which the int-or-string schema
allows) so objects round-trip byte for byte; the engine parses it into exact integers with
the same rounding as Kubernetes (`Value()` and `MilliValue()` round up), so quota sums never
drift through floating point.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache
from typing import Final

__all__ = [
    "Quantity",
    "QuantityError",
    "amount",
    "format_quantity",
    "is_quantity",
    "milli_value",
    "parse_quantity",
    "resource_amount",
    "value",
]

QUANTITY_PATTERN: Final = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)

_NUMBER = re.compile(r"^([+-]?)([0-9]*)(?:\.([0-9]*))?(.*)$")
_EXPONENT = re.compile(r"^[eE]([+-]?[0-9]+)$")

_BINARY: Final = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL: Final = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_DECIMAL_BY_EXPONENT: Final = {exp: suffix for suffix, exp in _DECIMAL.items()}
_BINARY_BY_POWER: Final = {power: suffix for suffix, power in _BINARY.items()}

# Resources counted in thousandths, as upstream does (cpu requests are often "500m").
MILLI_RESOURCES: Final = frozenset({"cpu"})


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity."""


class Quantity(str):
    """A quantity in Kubernetes syntax ("500m", "4Gi", "1e3"); parse it with `amount()`."""

    __slots__ = ()


@lru_cache(maxsize=8192)
def parse_quantity(text: str | int) -> Fraction:
    """Return the exact value of a quantity in base units (cores, bytes, GPUs...)."""
    if isinstance(text, bool):
        raise QuantityError(f"{text!r} is not a quantity")
    if isinstance(text, int):
        return Fraction(text)
    match = _NUMBER.match(text.strip())
    if match is None or text != text.strip():
        raise QuantityError(f"{text!r} is not a quantity")
    sign, whole, fraction, suffix = match.groups()
    if not whole and not fraction:
        raise QuantityError(f"{text!r} is not a quantity: no digits")
    number = Fraction(int(whole or "0"))
    if fraction:
        number += Fraction(int(fraction), 10 ** len(fraction))
    if sign == "-":
        number = -number
    return number * _multiplier(text, suffix)


def _multiplier(text: str, suffix: str) -> Fraction:
    if suffix in _BINARY:
        return Fraction(1024 ** _BINARY[suffix])
    if suffix in _DECIMAL:
        return Fraction(10) ** _DECIMAL[suffix]
    exponent = _EXPONENT.match(suffix)
    if exponent is None:
        raise QuantityError(f"{text!r} is not a quantity: unknown suffix {suffix!r}")
    power = int(exponent.group(1))
    if abs(power) > 1000:
        raise QuantityError(f"{text!r} is not a quantity: exponent out of range")
    return Fraction(10) ** power


def is_quantity(text: str | int) -> bool:
    """True when `text` parses as a quantity."""
    try:
        parse_quantity(text)
    except QuantityError:
        return False
    return True


@lru_cache(maxsize=8192)
def value(text: str | int) -> int:
    """The quantity as a whole number of base units, rounded up (Kubernetes `Value()`)."""
    return math.ceil(parse_quantity(text))


@lru_cache(maxsize=8192)
def milli_value(text: str | int) -> int:
    """The quantity in thousandths of a unit, rounded up (Kubernetes `MilliValue()`)."""
    return math.ceil(parse_quantity(text) * 1000)


def resource_amount(resource: str, text: str | int) -> int:
    """The integer the engine accounts with: milli-units for cpu, whole units otherwise."""
    return milli_value(text) if resource in MILLI_RESOURCES else value(text)


def amount(text: str | int) -> Fraction:
    """Alias of `parse_quantity` that reads better at call sites."""
    return parse_quantity(text)


def format_quantity(number: Fraction | int, *, binary: bool = False) -> Quantity:
    """Write a value in the shortest exact form, as Kubernetes would canonicalise it.

    With `binary`, whole multiples of 1024 use Ki..Ei (memory); otherwise decimal
    suffixes are used. Values finer than a nano-unit are rounded up, like Kubernetes.
    """
    number = Fraction(number)
    if binary and number.denominator == 1:
        integer = int(number)
        power = 0
        while power < 6 and integer != 0 and integer % 1024 == 0:
            integer //= 1024
            power += 1
        if power:
            return Quantity(f"{integer}{_BINARY_BY_POWER[power]}")
        return Quantity(str(integer))
    return Quantity(_format_decimal(number))


def _format_decimal(number: Fraction) -> str:
    nanos = math.ceil(number * 10**9)
    if nanos == 0:
        return "0"
    sign = "-" if nanos < 0 else ""
    nanos = abs(nanos)
    exponent = -9
    while nanos % 1000 == 0 and exponent < 18:
        nanos //= 1000
        exponent += 3
    return f"{sign}{nanos}{_DECIMAL_BY_EXPONENT[exponent]}"

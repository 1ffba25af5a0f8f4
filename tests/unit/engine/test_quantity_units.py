"""The engine's quantity adapter: base units by resource over the API layer's one parser."""

from __future__ import annotations

from fractions import Fraction

import pytest

from core.api import quantity as api
from core.engine.quantity import QuantityError, format_quantity, parse_quantity, to_base_units


@pytest.mark.parametrize(
    ("resource", "text", "expected"),
    [
        ("cpu", "1", 1000),
        ("cpu", "250m", 250),
        ("cpu", "0.0001", 1),
        ("cpu", "1e-9", 1),
        ("cpu", "2k", 2_000_000),
        ("memory", "1.5Gi", 1536 * 2**20),
        ("memory", "1m", 1),
        ("memory", "1e3", 1000),
        ("pods", 7, 7),
        ("nvidia.com/gpu", "+2", 2),
        ("cpu", "-1500m", -1500),
    ],
)
def test_counts_in_base_units_rounding_up(resource: str, text: str | int, expected: int) -> None:
    assert to_base_units(resource, text) == expected
    assert to_base_units(resource, text) == api.resource_amount(resource, text)


@pytest.mark.parametrize(
    ("value", "cpu", "memory"),
    [(0.5, 500, 1), (1.0, 1000, 1), (1e-05, 1, 1), (2.5e-3, 3, 1), (1e16, 10**19, 10**16)],
)
def test_yaml_floats_count_like_their_text(value: float, cpu: int, memory: int) -> None:
    assert to_base_units("cpu", value) == cpu
    assert to_base_units("memory", value) == memory
    assert parse_quantity(value) == api.parse_quantity(repr(value))


def test_surrounding_blanks_are_ignored() -> None:
    assert to_base_units("cpu", " 2m\n") == 2
    assert parse_quantity("\t1Ki ") == Fraction(1024)


@pytest.mark.parametrize(
    "bad", ["", "lots", "1.5e3Ki", "1_000", "1e3m", "1 k", True, float("inf"), float("nan")]
)
def test_rejects_what_kubernetes_rejects(bad: str | bool | float) -> None:
    with pytest.raises(QuantityError):
        to_base_units("cpu", bad)


def test_error_type_is_the_api_layers() -> None:
    assert QuantityError is api.QuantityError


@pytest.mark.parametrize(
    ("resource", "amount", "text"),
    [
        ("cpu", 0, "0"),
        ("cpu", 1500, "1500m"),
        ("cpu", 2000, "2"),
        ("cpu", 3_000_000, "3k"),
        ("cpu", -1500, "-1500m"),
        ("memory", 3 * 2**30, "3Gi"),
        ("memory", 1000, "1000"),
        ("memory", 2**70, "1024Ei"),
        ("ephemeral-storage", 5 * 2**20, "5Mi"),
        ("hugepages-2Mi", 4 * 2**21, "8Mi"),
        ("pods", 5000, "5k"),
        ("pods", 1024, "1024"),
        ("nvidia.com/gpu", 7, "7"),
    ],
)
def test_formats_canonically_by_resource(resource: str, amount: int, text: str) -> None:
    formatted = format_quantity(resource, amount)
    assert formatted == text
    assert type(formatted) is str
    assert to_base_units(resource, formatted) == amount

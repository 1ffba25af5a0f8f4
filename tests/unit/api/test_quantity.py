"""Quantity parsing and formatting, with Kubernetes' rounding."""

from __future__ import annotations

from fractions import Fraction

import pytest

from core.api.quantity import (
    QuantityError,
    format_quantity,
    is_quantity,
    milli_value,
    parse_quantity,
    resource_amount,
    value,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", 0),
        ("1", 1),
        ("+2", 2),
        ("-3", -3),
        ("1.5", Fraction(3, 2)),
        (".5", Fraction(1, 2)),
        ("5.", 5),
        ("500m", Fraction(1, 2)),
        ("250u", Fraction(1, 4000)),
        ("7n", Fraction(7, 10**9)),
        ("2k", 2000),
        ("3M", 3 * 10**6),
        ("4G", 4 * 10**9),
        ("5T", 5 * 10**12),
        ("6P", 6 * 10**15),
        ("1E", 10**18),
        ("1Ki", 1024),
        ("1.5Mi", 3 * 2**19),
        ("4Gi", 4 * 2**30),
        ("1Ti", 2**40),
        ("1Pi", 2**50),
        ("2Ei", 2 * 2**60),
        ("1e3", 1000),
        ("1E3", 1000),
        ("2.5e-3", Fraction(1, 400)),
        ("12e+1", 120),
        (8, 8),
    ],
)
def test_parses_every_suffix_exactly(text: str | int, expected: Fraction | int) -> None:
    assert parse_quantity(text) == expected
    assert is_quantity(text)


@pytest.mark.parametrize(
    "text", ["", " ", "1 ", "abc", "Ki", "1KiB", "1.2.3", "1e", "1e1.5", "--1", "1k1", "0x10", True]
)
def test_rejects_malformed_text(text: str | bool) -> None:
    assert not is_quantity(text)
    with pytest.raises(QuantityError):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("text", "whole", "milli"),
    [
        ("1", 1, 1000),
        ("500m", 1, 500),
        ("1.5", 2, 1500),
        ("0.1m", 1, 1),
        ("1n", 1, 1),
        ("4Gi", 4 * 2**30, 4 * 2**30 * 1000),
        ("0", 0, 0),
    ],
)
def test_values_round_up_like_kubernetes(text: str, whole: int, milli: int) -> None:
    assert value(text) == whole
    assert milli_value(text) == milli


def test_engine_amounts_use_milli_cpu_and_whole_units_otherwise() -> None:
    assert resource_amount("cpu", "250m") == 250
    assert resource_amount("memory", "1Ki") == 1024
    assert resource_amount("nvidia.com/gpu", "2") == 2


@pytest.mark.parametrize(
    ("number", "binary", "text"),
    [
        (0, False, "0"),
        (2, False, "2"),
        (2000, False, "2k"),
        (Fraction(3, 2), False, "1500m"),
        (Fraction(1, 4000), False, "250u"),
        (-2, False, "-2"),
        (3 * 2**30, True, "3Gi"),
        (3 * 2**29, True, "1536Mi"),
        (1000, True, "1000"),
        (1025, True, "1025"),
        (Fraction(1, 2), True, "500m"),
    ],
)
def test_formats_canonically(number: Fraction | int, binary: bool, text: str) -> None:
    formatted = format_quantity(number, binary=binary)
    assert formatted == text
    assert parse_quantity(formatted) == number


def test_formatting_rounds_below_a_nano_unit_up() -> None:
    assert format_quantity(Fraction(1, 10**10)) == "1n"

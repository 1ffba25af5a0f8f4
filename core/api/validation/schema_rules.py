"""Checks every field against the same markers the CRD schema is generated from.

This is the Python twin of the apiserver's OpenAPI validation (lengths, patterns, ranges,
list sizes, unique list keys, quantity syntax, and the types inside raw JSON that has a
`shape`, such as pod templates), so a webhook or the CLI can reject an object with the
same verdict before it reaches a server. Cross-field rules live in the per-kind modules.

An empty string, empty list or empty map stands for "not set" (the encoder omits it), so
minimum sizes only apply to fields that are required or actually set.
"""

from __future__ import annotations

import enum
import re
import typing
from dataclasses import dataclass
from functools import cache
from typing import Any

import msgspec

from core.api import codec
from core.api.api_struct import ApiStruct
from core.api.markers import unwrap
from core.api.quantity import Quantity, is_quantity
from core.api.validation.field_errors import (
    ROOT,
    ErrorType,
    FieldError,
    FieldPath,
    decode_error,
    duplicate,
    invalid,
    required,
    too_many,
)


@dataclass(frozen=True, slots=True)
class _Field:
    attr: str
    name: str
    tp: Any


@cache
def _fields(cls: type[ApiStruct]) -> tuple[_Field, ...]:
    hints = typing.get_type_hints(cls, include_extras=True)
    return tuple(
        _Field(field.name, field.encode_name, hints[field.name])
        for field in msgspec.structs.fields(cls)
    )


@cache
def _pattern(text: str) -> re.Pattern[str]:
    # RE2 (the apiserver's engine) accepts inline flags after "^"; Python wants them first.
    if text.startswith("^(?i)"):
        text = "(?i)^" + text[len("^(?i)") :]
    return re.compile(text)


def _struct_fields(obj: Any) -> tuple[_Field, ...]:
    cls: type[ApiStruct] = type(obj)
    return _fields(cls)


def validate_schema(obj: ApiStruct, path: FieldPath = ROOT) -> list[FieldError]:
    """All marker violations in `obj` and everything below it."""
    errors: list[FieldError] = []
    _check_struct(obj, path, errors)
    return errors


def _check_struct(obj: ApiStruct, path: FieldPath, errors: list[FieldError]) -> None:
    for field in _fields(type(obj)):
        _check_value(getattr(obj, field.attr), field.tp, path.child(field.name), errors)


def _check_value(value: Any, tp: Any, path: FieldPath, errors: list[FieldError]) -> None:
    info = unwrap(tp)
    rules = info.constraints
    if value is None:
        if rules.get("required"):
            errors.append(required(path))
        return
    base = info.base
    origin = typing.get_origin(base)
    if base is Quantity:
        _check_quantity(value, path, errors)
    elif isinstance(value, str) and not isinstance(value, enum.Enum):
        _check_string(value, rules, path, errors)
    elif isinstance(value, enum.Enum):
        allowed = rules.get("enum")
        if allowed is not None and value.value not in allowed:
            errors.append(
                FieldError(str(path), ErrorType.NOT_SUPPORTED, f"must be one of {list(allowed)}")
            )
    elif isinstance(value, bool):
        pass
    elif isinstance(value, int):
        _check_number(value, rules.get("minimum"), rules.get("maximum"), path, errors)
    elif isinstance(value, ApiStruct):
        _check_struct(value, path, errors)
    elif origin is list:
        _check_list(value, typing.get_args(base)[0], rules, path, errors)
    elif origin is dict:
        shape = rules.get("shape")
        if shape is not None:
            _check_shaped(value, shape, path, errors)
        else:
            _check_map(value, typing.get_args(base)[1], rules, path, errors)


def _check_shaped(
    value: dict[str, Any], shape: type[ApiStruct], path: FieldPath, errors: list[FieldError]
) -> None:
    """Raw JSON with a described shape: the types first, then the markers of the shape."""
    try:
        shaped = codec.decode(shape, value)
    except msgspec.ValidationError as error:
        errors.append(decode_error(error, path))
        return
    _check_struct(shaped, path, errors)


def _check_quantity(value: str, path: FieldPath, errors: list[FieldError]) -> None:
    if not is_quantity(value):
        errors.append(
            invalid(path, f"{value!r} is not a quantity (examples: 2, 500m, 1.5, 4Gi, 1e3)")
        )


def _check_string(
    value: str, rules: dict[str, Any], path: FieldPath, errors: list[FieldError]
) -> None:
    if value == "":
        if rules.get("required") and rules.get("min_length", 0) > 0:
            errors.append(required(path))
        return
    max_length = rules.get("max_length")
    if max_length is not None and len(value) > max_length:
        errors.append(
            FieldError(str(path), ErrorType.TOO_LONG, f"may not be longer than {max_length}")
        )
    pattern = rules.get("pattern")
    if pattern is not None and not _pattern(pattern).match(value):
        errors.append(invalid(path, f"{value!r} does not match {pattern}"))
    allowed = rules.get("enum")
    if allowed is not None and value not in allowed:
        errors.append(
            FieldError(str(path), ErrorType.NOT_SUPPORTED, f"must be one of {list(allowed)}")
        )


def _check_number(
    value: int, minimum: int | None, maximum: int | None, path: FieldPath, errors: list[FieldError]
) -> None:
    if minimum is not None and value < minimum:
        errors.append(invalid(path, f"must be greater than or equal to {minimum}, got {value}"))
    if maximum is not None and value > maximum:
        errors.append(invalid(path, f"must be less than or equal to {maximum}, got {value}"))


def _check_list(
    items: list[Any], item_tp: Any, rules: dict[str, Any], path: FieldPath, errors: list[FieldError]
) -> None:
    min_items = rules.get("min_items")
    if min_items is not None and len(items) < min_items and (items or rules.get("required")):
        errors.append(invalid(path, f"must have at least {min_items} item(s)"))
    max_items = rules.get("max_items")
    if max_items is not None and len(items) > max_items:
        errors.append(too_many(path, f"must have at most {max_items} items, got {len(items)}"))
    list_type = rules.get("list_type")
    if list_type == "map":
        _check_unique_keys(items, tuple(rules.get("list_map_keys", ())), path, errors)
    elif list_type == "set":
        seen: set[Any] = set()
        for position, item in enumerate(items):
            if item in seen:
                errors.append(duplicate(path.index(position), f"{item!r} is listed twice"))
            seen.add(item)
    item_rules = {
        "max_length": rules.get("item_max_length"),
        "minimum": rules.get("item_minimum"),
    }
    for position, item in enumerate(items):
        item_path = path.index(position)
        _check_value(item, item_tp, item_path, errors)
        if isinstance(item, str) and item_rules["max_length"] is not None:
            _check_string(item, {"max_length": item_rules["max_length"]}, item_path, errors)
        if isinstance(item, int) and item_rules["minimum"] is not None:
            _check_number(item, item_rules["minimum"], None, item_path, errors)


def _check_unique_keys(
    items: list[Any], keys: tuple[str, ...], path: FieldPath, errors: list[FieldError]
) -> None:
    seen: dict[tuple[Any, ...], int] = {}
    for position, item in enumerate(items):
        fields = {field.name: field.attr for field in _struct_fields(item)}
        key = tuple(getattr(item, fields[name]) for name in keys)
        if key in seen:
            shown = ", ".join(f"{name}={value!r}" for name, value in zip(keys, key, strict=True))
            errors.append(
                duplicate(path.index(position), f"{shown} is already used at index {seen[key]}")
            )
        else:
            seen[key] = position


def _check_map(
    entries: dict[str, Any],
    value_tp: Any,
    rules: dict[str, Any],
    path: FieldPath,
    errors: list[FieldError],
) -> None:
    max_properties = rules.get("max_properties")
    if max_properties is not None and len(entries) > max_properties:
        errors.append(
            too_many(path, f"must have at most {max_properties} entries, got {len(entries)}")
        )
    if value_tp is Any:
        return
    for key, value in entries.items():
        _check_value(value, value_tp, path.key(key), errors)

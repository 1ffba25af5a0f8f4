"""Structural OpenAPI v3 schemas derived from the typed API structs.

Walks msgspec field information and the markers in `core.api.markers`; nothing here
knows about particular kinds. Every object node gets a `type` (or keeps unknown fields),
and `additionalProperties` never sits beside `properties`, so the result is a structural
schema the apiserver accepts for pruning and defaulting.
"""

from __future__ import annotations

import enum
import typing
from datetime import datetime
from typing import Any

import msgspec

from core.api.api_struct import ApiStruct
from core.api.markers import Rule, immutable_rule, unwrap
from core.api.quantity import QUANTITY_PATTERN, Quantity

Schema = dict[str, Any]

# Quantities are short; a bound lets CEL rules over them pass the apiserver's cost check.
QUANTITY_MAX_LENGTH = 40

_ROOT_FIELDS = {"api_version", "kind", "metadata"}

_DIRECT_KEYS = {
    "max_length": "maxLength",
    "min_length": "minLength",
    "pattern": "pattern",
    "minimum": "minimum",
    "maximum": "maximum",
    "max_items": "maxItems",
    "min_items": "minItems",
    "max_properties": "maxProperties",
    "list_type": "x-kubernetes-list-type",
    "map_type": "x-kubernetes-map-type",
    "format": "format",
}
_ITEM_KEYS = {"item_max_length": "maxLength", "item_minimum": "minimum"}


class SchemaError(TypeError):
    """A type or marker the generator cannot express."""


def _rules(rules: typing.Iterable[Rule]) -> list[Schema]:
    out = []
    for rule in rules:
        entry: Schema = {"rule": rule.rule, "message": rule.message}
        if rule.field_path:
            entry["fieldPath"] = rule.field_path
        out.append(entry)
    return out


def _apply_constraints(node: Schema, constraints: dict[str, Any]) -> Schema:
    for key, value in constraints.items():
        if key in _DIRECT_KEYS:
            node[_DIRECT_KEYS[key]] = value
        elif key in _ITEM_KEYS:
            node["items"][_ITEM_KEYS[key]] = value
        elif key == "list_map_keys":
            node["x-kubernetes-list-map-keys"] = list(value)
        elif key == "enum":
            node["enum"] = list(value)
    rules = list(constraints.get("rules", ()))
    if constraints.get("immutable"):
        rules.append(immutable_rule())
    if rules:
        node.setdefault("x-kubernetes-validations", []).extend(_rules(rules))
    return node


def type_schema(tp: Any) -> Schema:
    """Schema of an annotated type (field-level markers included)."""
    info = unwrap(tp)
    node = _base_schema(info.base, info.constraints)
    if info.description:
        node["description"] = info.description
    return _apply_constraints(node, info.constraints)


def _base_schema(base: Any, constraints: dict[str, Any]) -> Schema:
    origin = typing.get_origin(base)
    if base is Quantity:
        return {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": QUANTITY_PATTERN,
            "maxLength": QUANTITY_MAX_LENGTH,
            "x-kubernetes-int-or-string": True,
        }
    if base is bool:
        return {"type": "boolean"}
    if base is int:
        return {"type": "integer"}
    if base is str:
        return {"type": "string"}
    if base is datetime:
        return {"type": "string", "format": "date-time"}
    if isinstance(base, type) and issubclass(base, enum.Enum):
        return {"type": "string", "enum": [member.value for member in base]}
    if isinstance(base, type) and issubclass(base, ApiStruct):
        return struct_schema(base)
    if origin is list:
        (item,) = typing.get_args(base)
        return {"type": "array", "items": type_schema(item)}
    if origin is dict:
        key, value = typing.get_args(base)
        if key is not str:
            raise SchemaError(f"map keys must be strings: {base!r}")
        if value is Any:
            shape = constraints.get("shape")
            if shape is not None:
                return struct_schema(shape)
            if not constraints.get("preserve_unknown"):
                raise SchemaError(f"untyped map needs preserve_unknown: {base!r}")
            return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        return {"type": "object", "additionalProperties": type_schema(value)}
    raise SchemaError(f"no schema for type {base!r}")


def _default_value(field: msgspec.structs.FieldInfo) -> Any:
    if field.default is not msgspec.NODEFAULT:
        value = field.default
    elif field.default_factory is not msgspec.NODEFAULT:
        value = field.default_factory()
    else:
        raise SchemaError(f"field {field.name} is marked defaulted but has no default")
    if isinstance(value, Quantity):
        text = str(value)
        return int(text) if text.isdigit() else text
    if isinstance(value, msgspec.Struct) and value == type(value)():
        return {}  # the apiserver fills in the nested defaults itself
    return msgspec.to_builtins(value, enc_hook=str)


def struct_schema(cls: type[ApiStruct], *, root: bool = False) -> Schema:
    """Object schema of a struct: its fields, required list, rules and path rules."""
    properties: Schema = {}
    required: list[str] = []
    hints = typing.get_type_hints(cls, include_extras=True)
    for field in msgspec.structs.fields(cls):
        if root and field.name in _ROOT_FIELDS:
            continue
        annotated = hints[field.name]
        node = type_schema(annotated)
        constraints = unwrap(annotated).constraints
        if constraints.get("defaulted"):
            node["default"] = _default_value(field)
        if constraints.get("required"):
            required.append(field.encode_name)
        properties[field.encode_name] = node
    node = {"type": "object", "properties": properties}
    if required:
        node["required"] = sorted(required)
    markers: dict[str, Any] = dict(getattr(cls, "schema_markers", {}))
    path_rules = markers.pop("path_rules", {})
    if markers.pop("preserve_unknown", False):
        node["x-kubernetes-preserve-unknown-fields"] = True
    _apply_constraints(node, markers)
    for path, rules in path_rules.items():
        target = _descend(node, path)
        target.setdefault("x-kubernetes-validations", []).extend(_rules(rules))
    return node


def _descend(node: Schema, dotted: str) -> Schema:
    """Follow a dotted path of property names, stepping into list items on the way."""
    for name in dotted.split("."):
        if node.get("type") == "array":
            node = node["items"]
        try:
            node = node["properties"][name]
        except KeyError:
            raise SchemaError(f"path rule target {dotted!r} not found at {name!r}") from None
    if node.get("type") == "array":
        node = node["items"]
    return node


def root_schema(cls: type[ApiStruct]) -> Schema:
    """Schema of a top-level kind, with apiVersion, kind and metadata."""
    node = struct_schema(cls, root=True)
    node["properties"] = {
        "apiVersion": {
            "type": "string",
            "description": "Versioned schema of this object, e.g. kueue.x-k8s.io/v1beta2.",
        },
        "kind": {"type": "string", "description": "Kind of this object, in CamelCase."},
        "metadata": {"type": "object"},
        **node["properties"],
    }
    if cls.__doc__:
        node["description"] = " ".join(cls.__doc__.split())
    return node

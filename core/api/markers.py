"""Annotations that carry an API field's meaning and its server-side constraints.

The typed structs are the single source of truth: the CRD generator reads these markers
to write descriptions, defaults, limits and CEL rules, and the Python validators read the
same markers, so the schema served by the apiserver and the checks run by the hub's
webhooks cannot drift apart.

Markers never constrain decoding: objects read from an apiserver were already validated
there, and decoding must stay fast and lenient.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar, Union, cast

import msgspec

T = TypeVar("T")

DNS1123_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
DNS1123_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
QUALIFIED_NAME = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
KIND_NAME = r"^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$"
CONDITION_REASON = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"

# Constraint keywords a marker may carry (crdgen.schema turns each into schema keywords).
CONSTRAINT_KEYS = frozenset(
    {
        "max_length",
        "min_length",
        "pattern",
        "enum",
        "minimum",
        "maximum",
        "max_items",
        "min_items",
        "max_properties",
        "list_type",
        "list_map_keys",
        "map_type",
        "item_max_length",
        "item_minimum",
        "format",
        "rules",
        "required",
        "defaulted",
        "preserve_unknown",
        "shape",
        "immutable",
    }
)


# Struct-level markers, set as `schema_markers: ClassVar[SchemaMarkers]` on a struct:
# the same keys as `constrain()` plus "path_rules", a mapping from a dotted path below the
# struct to extra rules that hold only in this context (lists are stepped into).
# "preserve_unknown" on a struct keeps fields it does not declare (typed ones are checked).
#
# "shape" on a raw `dict[str, Any]` field names a struct that describes the field's schema
# while the value stays raw JSON at run time (pod templates: typed enough to be refused
# when unreadable, passed on unchanged otherwise).
SchemaMarkers = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Rule:
    """A CEL rule the apiserver evaluates on the schema node it is attached to.

    `field_path` (relative, e.g. ".lendingLimit") makes the apiserver report the error at
    that field instead of at the node, so users see which value to fix.
    """

    rule: str
    message: str
    field_path: str | None = None


def doc(description: str, **constraints: Any) -> msgspec.Meta:
    """Describe a field; keyword constraints become schema limits and CEL rules."""
    _check_keys(constraints)
    return msgspec.Meta(description=description, extra=constraints)


def constrain(**constraints: Any) -> msgspec.Meta:
    """Constraints without a description, for reusable type aliases."""
    _check_keys(constraints)
    return msgspec.Meta(extra=constraints)


def _check_keys(constraints: dict[str, Any]) -> None:
    unknown = set(constraints) - CONSTRAINT_KEYS
    if unknown:
        raise TypeError(f"unknown schema constraint(s): {sorted(unknown)}")


def always(value: T) -> T:
    """A default that is still written on encode.

    Upstream serialises some fields without `omitempty` (counters such as
    `status.pendingWorkloads`, required quantities, apiVersion and kind). A JSON merge
    patch that left out a zero would keep the old value on the server, and a required
    field left out is rejected, so these are always written. (msgspec omits a default
    only when it is the default object itself or an empty list/dict from a factory.)
    """
    if isinstance(value, list | dict):
        # Copied per instance: a shared mutable default would leak between objects.
        factory = cast(Callable[[], T], value.copy)
    else:

        def factory() -> T:
            return value

    default: T = msgspec.field(default_factory=factory)
    return default


Int32 = Annotated[int, constrain(format="int32")]
Int64 = Annotated[int, constrain(format="int64")]
DnsSubdomain = Annotated[str, constrain(max_length=253, pattern=DNS1123_SUBDOMAIN)]
DnsLabel = Annotated[str, constrain(max_length=63, pattern=DNS1123_LABEL)]
ResourceName = Annotated[str, constrain(max_length=317)]

# Names of other API objects, validated like object names (DNS-1123 subdomains).
ClusterQueueReference = DnsSubdomain
CohortReference = DnsSubdomain
ResourceFlavorReference = DnsSubdomain
LocalQueueName = DnsSubdomain
TopologyReference = DnsSubdomain
PodSetReference = DnsLabel
AdmissionCheckReference = Annotated[str, constrain(max_length=316, min_length=1)]


def immutable_rule(message: str = "field is immutable") -> Rule:
    """A transition rule: the value may be set on create but never changed."""
    return Rule("self == oldSelf", message)


@dataclass(frozen=True, slots=True)
class Unwrapped:
    """A field type with its markers pulled out."""

    base: Any
    description: str | None
    constraints: dict[str, Any]
    optional: bool


def unwrap(tp: Any) -> Unwrapped:
    """Strip Annotated and Optional from a type, collecting description and constraints.

    Outer annotations (on the field) win over inner ones (on a reusable alias).
    """
    description: str | None = None
    constraints: dict[str, Any] = {}
    optional = False
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            base, *metas = typing.get_args(tp)
            for meta in metas:
                if isinstance(meta, msgspec.Meta):
                    description = description or meta.description
                    for key, value in (meta.extra or {}).items():
                        constraints.setdefault(key, value)
            tp = base
            continue
        if origin in (Union, types.UnionType):
            members = [arg for arg in typing.get_args(tp) if arg is not type(None)]
            if len(members) != 1:
                raise TypeError(f"unions other than Optional are not supported: {tp!r}")
            optional = True
            tp = members[0]
            continue
        return Unwrapped(tp, description, constraints, optional)

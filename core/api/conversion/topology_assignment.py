"""A topology assignment: v1beta1 lists every domain (`domains[]`: values and count),
v1beta2 stores slices with shared values factored out. Both describe the same placement,
so the conversion is exact: decode one form into domains, encode the other."""

from __future__ import annotations

from typing import Any

from core.adapters.topology_encoding import decode, encode
from core.engine.model import TopologyAssignment, TopologyDomainAssignment

JsonObject = dict[str, Any]


def to_v1beta1(assignment: JsonObject) -> JsonObject:
    decoded = decode(assignment)
    return {
        "levels": list(decoded.levels),
        "domains": [
            {"values": list(domain.values), "count": domain.count} for domain in decoded.domains
        ],
    }


def to_v1beta2(assignment: JsonObject) -> JsonObject:
    domains = assignment.get("domains") or []
    return encode(
        TopologyAssignment(
            levels=tuple(str(level) for level in assignment.get("levels") or ()),
            domains=tuple(
                TopologyDomainAssignment(
                    values=tuple(str(value) for value in domain.get("values") or ()),
                    count=int(domain.get("count", 0)),
                )
                for domain in domains
            ),
        )
    )

"""The compact v1beta2 encoding of a topology assignment, both ways.

The engine hands out a flat list of domains (label values per level, pods per domain).
`status.admission.podSetAssignments[].topologyAssignment` stores it as upstream v0.19.2
does (its default `TASAssignmentsEncodingByHostnamePrefix` behaviour): domains are split
into runs that share a reusable hostname prefix (up to a `-`), each run one slice whose
values per level are either `universal` (all equal) or `individual` with the common
prefix and suffix factored out, and whose pod counts are `universal` when all equal;
when one single slice serializes shorter, that is used instead. At most 100,000 domains
per slice and 1,000 slices, as the API allows.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from core.api.topology import HOSTNAME_LABEL
from core.engine.model import TopologyAssignment, TopologyDomainAssignment

MAX_DOMAINS_PER_SLICE = 100_000
MAX_SLICES = 1_000


class TopologyAssignmentError(ValueError):
    """A stored topologyAssignment that does not describe any placement."""


def _level_values(values: Sequence[str]) -> dict[str, Any]:
    first = values[0]
    prefix = suffix = first
    min_len = max_len = len(first)
    for s in values[1:]:
        n = len(s)
        min_len, max_len = min(min_len, n), max(max_len, n)
        prefix = prefix[:n]
        suffix = suffix[len(suffix) - n :] if n < len(suffix) else suffix
        for i in range(len(prefix)):
            if s[i] != prefix[i]:
                prefix = prefix[:i]
                break
        for i in range(len(suffix)):
            if s[len(s) - 1 - i] != suffix[len(suffix) - 1 - i]:
                suffix = suffix[len(suffix) - i :]
                break
    if len(prefix) == max_len:
        return {"universal": prefix}
    if len(prefix) + len(suffix) > min_len:
        prefix = prefix[: min_len - len(suffix)]
    individual: dict[str, Any] = {}
    if prefix:
        individual["prefix"] = prefix
    if suffix:
        individual["suffix"] = suffix
    individual["roots"] = [s[len(prefix) : len(s) - len(suffix)] for s in values]
    return {"individual": individual}


def _slice(levels: Sequence[str], domains: Sequence[TopologyDomainAssignment]) -> dict[str, Any]:
    counts = [d.count for d in domains]
    pod_counts: dict[str, Any] = (
        {"universal": counts[0]} if all(c == counts[0] for c in counts) else {"individual": counts}
    )
    return {
        "domainCount": len(domains),
        "valuesPerLevel": [
            _level_values([d.values[idx] for d in domains]) for idx in range(len(levels))
        ],
        "podCounts": pod_counts,
    }


def _chunks(
    items: Sequence[TopologyDomainAssignment],
) -> Iterator[Sequence[TopologyDomainAssignment]]:
    for start in range(0, len(items), MAX_DOMAINS_PER_SLICE):
        yield items[start : start + MAX_DOMAINS_PER_SLICE]


def _prefix_keys(domains: Sequence[TopologyDomainAssignment]) -> list[str] | None:
    """Per domain, its longest hostname prefix (ending in `-`) that another domain shares,
    backing off to shorter prefixes until the runs fit in MAX_SLICES slices."""
    ends: list[list[int]] = []
    seen: dict[str, int] = {}
    for d in domains:
        host = d.values[-1]
        mine = [i + 1 for i in range(len(host) - 1) if host[i] == "-"]
        for end in mine:
            seen[host[:end]] = min(2, seen.get(host[:end], 0) + 1)
        ends.append(mine)
    max_depth = max((len(e) for e in ends), default=0)
    for depth in range(max_depth, 0, -1):
        keys = []
        for d, mine in zip(domains, ends, strict=True):
            key = ""
            for end in reversed(mine[:depth]):
                if seen[d.values[-1][:end]] >= 2:
                    key = d.values[-1][:end]
                    break
            keys.append(key)
        slices = 0
        start = 0
        for i in range(1, len(domains) + 1):
            if i == len(domains) or keys[i] != keys[start]:
                slices += -(-(i - start) // MAX_DOMAINS_PER_SLICE)
                start = i
        if slices <= MAX_SLICES:
            return keys
    return None


def _runs(
    domains: Sequence[TopologyDomainAssignment], keys: list[str] | None
) -> Iterator[Sequence[TopologyDomainAssignment]]:
    if not keys:
        yield domains
        return
    start = 0
    for i in range(1, len(domains) + 1):
        if i == len(domains) or keys[i] != keys[start]:
            yield domains[start:i]
            start = i


def encode_by_hostname_prefix(assignment: TopologyAssignment) -> dict[str, Any]:
    """One slice per run of hostnames sharing a reusable prefix (or one run if none)."""
    levels = list(assignment.levels)
    domains = assignment.domains
    keys = None
    if len(domains) > 1 and levels and levels[-1] == HOSTNAME_LABEL:
        keys = _prefix_keys(domains)
    return {
        "levels": levels,
        "slices": [_slice(levels, chunk) for run in _runs(domains, keys) for chunk in _chunks(run)],
    }


def encode(assignment: TopologyAssignment) -> dict[str, Any]:
    """The v1beta2 `topologyAssignment` object for an engine assignment: the
    hostname-prefix form, or one single slice when that serializes shorter."""
    levels = list(assignment.levels)
    domains = assignment.domains
    by_prefix = encode_by_hostname_prefix(assignment)
    if not domains:
        return by_prefix
    if len(by_prefix["slices"]) <= 1 or len(domains) > MAX_DOMAINS_PER_SLICE:
        return by_prefix
    single = {"levels": levels, "slices": [_slice(levels, domains)]}
    if len(_compact_json(single)) < len(_compact_json(by_prefix)):
        return single
    return by_prefix


def _compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _value_at(values: Mapping[str, Any], idx: int) -> str:
    universal = values.get("universal")
    if universal is not None:
        return str(universal)
    individual = values.get("individual") or {}
    roots = individual.get("roots") or []
    return f"{individual.get('prefix') or ''}{roots[idx]}{individual.get('suffix') or ''}"


def decode(data: Mapping[str, Any]) -> TopologyAssignment:
    """An engine assignment from a stored `topologyAssignment` (any valid encoding)."""
    levels = tuple(str(level) for level in data.get("levels") or ())
    domains: list[TopologyDomainAssignment] = []
    try:
        for slice_ in data.get("slices") or ():
            count = int(slice_.get("domainCount", 0))
            per_level = slice_.get("valuesPerLevel") or []
            pod_counts = slice_.get("podCounts") or {}
            if len(per_level) != len(levels):
                raise TopologyAssignmentError("valuesPerLevel must have one entry per level")
            for idx in range(count):
                universal = pod_counts.get("universal")
                pods = universal if universal is not None else pod_counts["individual"][idx]
                domains.append(
                    TopologyDomainAssignment(
                        values=tuple(_value_at(v, idx) for v in per_level), count=int(pods)
                    )
                )
    except (KeyError, IndexError, TypeError, ValueError) as err:
        if isinstance(err, TopologyAssignmentError):
            raise
        raise TopologyAssignmentError(f"invalid topologyAssignment: {err}") from err
    return TopologyAssignment(levels=levels, domains=tuple(domains))

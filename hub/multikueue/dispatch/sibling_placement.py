"""Workloads of one job that must run on one worker: a LeaderWorkerSet's groups.

A LeaderWorkerSet is queued as one Workload per group but copied to a worker whole, so
every group must be admitted on that one worker (upstream v0.19.2's
MultiKueueMultiWorkloadAdapter). As upstream: the group of the lowest index still
wanted (the primary) is dispatched like any Workload; another waits until a sibling is
placed (has a clusterName), and is then nominated to that worker only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from hub.multikueue.dispatch.workload_facts import Json, cluster_name, metadata
from integrations.framework.job_metadata import parse_int
from integrations.framework.labels import COMPONENT_WORKLOAD_INDEX_ANNOTATION


@dataclass(frozen=True, slots=True)
class SiblingPlacement:
    cluster: str | None = None
    """A sibling's worker: nominate this one only."""
    wait: bool = False
    """Not the primary, and no sibling is placed yet: nominate nothing now."""


def group_index(workload: Json) -> int | None:
    """The group index the Workload's builder recorded (None: not a component's)."""
    annotations = metadata(workload).get("annotations") or {}
    return parse_int(annotations.get(COMPONENT_WORKLOAD_INDEX_ANNOTATION))


def sibling_placement(workload: Json, siblings: Iterable[Json]) -> SiblingPlacement:
    """Where `workload` may go, given its live siblings (see module docstring)."""
    others = list(siblings)
    for sibling in others:
        placed = cluster_name(sibling)
        if placed is not None:
            return SiblingPlacement(cluster=placed)
    own = group_index(workload)
    if own is None:
        return SiblingPlacement()
    indexes = [index for s in others if (index := group_index(s)) is not None]
    return SiblingPlacement(wait=any(index < own for index in indexes))

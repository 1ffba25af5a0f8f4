"""Which Pods of a group to keep first when some must go, as upstream orders them.

Active Pods (runnable or succeeded): with the Pod finalizer, ungated, oldest first, so
the newest gated extras are the excess. Inactive ones (failed, or deleted unplaced):
with the finalizer, last active latest, oldest first, so the ones that failed longest
ago are released first when replacements come.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from integrations.framework.job_metadata import Job, metadata, status
from integrations.pod import pod_fields as fields

_NOT_YET = "~"
"""Sorts after every RFC 3339 timestamp: 'not happened yet' (upstream uses the clock's now)."""


def _created(pod: Job) -> str:
    return str(metadata(pod).get("creationTimestamp") or "")


def sort_active(pods: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ones to keep first: with the Pod finalizer, ungated, oldest (upstream's
    sortActivePods)."""
    return sorted(
        pods, key=lambda p: (not fields.has_finalizer(p), fields.has_gate(p), _created(p))
    )


def _last_active(pod: Job) -> str:
    """When the Pod was last seen active: its failure or its deletion, the earlier."""
    failed = _NOT_YET
    for condition in status(pod).get("conditions") or ():
        if isinstance(condition, dict) and condition.get("type") == "ContainersReady":
            if condition.get("status") == "False" and condition.get("reason") == fields.FAILED:
                failed = str(condition.get("lastTransitionTime") or _NOT_YET)
            break
    deleted = str(metadata(pod).get("deletionTimestamp") or _NOT_YET)
    return min(failed, deleted)


def sort_inactive(pods: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ones to keep first: with the Pod finalizer, last active latest, oldest
    (upstream's sortInactivePods); stable sorts, least significant key first."""
    ordered = sorted(pods, key=_created)
    ordered.sort(key=_last_active, reverse=True)
    ordered.sort(key=lambda p: not fields.has_finalizer(p))
    return ordered

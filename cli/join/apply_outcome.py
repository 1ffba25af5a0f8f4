"""Did an apply create, change or leave an object alone? Judged by content, not bookkeeping.

The object before the apply is compared with what the apiserver returned (the stored object,
or its server-side dry-run prediction). Bookkeeping the server keeps on every object
(resourceVersion, managedFields, uid, timestamps) and status are ignored: a second join that
only adds `fleetq-join` to managedFields, or meets a status written by a controller, is
"unchanged" — which is what a user asking "did join change my cluster?" means.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

_VOLATILE_METADATA = frozenset(
    {
        "resourceVersion",
        "managedFields",
        "uid",
        "creationTimestamp",
        "generation",
        "selfLink",
    }
)


class Outcome(enum.StrEnum):
    CREATED = "created"
    CHANGED = "changed"
    UNCHANGED = "unchanged"


def comparable(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object without status and server bookkeeping."""
    body = {key: value for key, value in obj.items() if key != "status"}
    metadata = body.get("metadata")
    if isinstance(metadata, Mapping):
        body["metadata"] = {k: v for k, v in metadata.items() if k not in _VOLATILE_METADATA}
    return body


def classify(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> Outcome:
    if before is None:
        return Outcome.CREATED
    return Outcome.UNCHANGED if comparable(before) == comparable(after) else Outcome.CHANGED


def changed_fields(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> list[str]:
    """Dotted paths whose values differ (leaves, or the shallowest differing list), sorted."""
    if before is None:
        return []
    return sorted(_diff(comparable(before), comparable(after), ""))


def _diff(old: Any, new: Any, prefix: str) -> list[str]:
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        paths: list[str] = []
        for key in sorted(set(old) | set(new), key=str):
            path = f"{prefix}.{key}" if prefix else str(key)
            paths.extend(_diff(old.get(key), new.get(key), path))
        return paths
    return [] if old == new else [prefix or "(object)"]

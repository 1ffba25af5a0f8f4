"""Small moves on JSON objects the per-kind conversions are written in."""

from __future__ import annotations

from typing import Any

JsonObject = dict[str, Any]


def child(obj: Any, *path: str) -> JsonObject | None:
    """The object at `path` under `obj`, or None when any step is missing or not an object."""
    node = obj
    for name in path:
        node = node.get(name) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else None


def rename(node: JsonObject | None, old: str, new: str) -> None:
    """Move field `old` of `node` to `new` (nothing when `old` is absent)."""
    if node is not None and old in node:
        node[new] = node.pop(old)


def drop(node: JsonObject | None, *names: str) -> None:
    if node is not None:
        for name in names:
            node.pop(name, None)


def items(node: JsonObject | None, name: str) -> list[JsonObject]:
    """The object items of list field `name` (none when absent or not a list)."""
    value = node.get(name) if node is not None else None
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []

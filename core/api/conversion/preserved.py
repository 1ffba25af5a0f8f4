"""Keeping v1beta2-only fields across a trip through v1beta1.

A v1beta1 client that reads an object and writes it back would otherwise erase what
v1beta1 cannot express (preemption gates, a concurrent admission policy, ...). Going to
v1beta1 such fields move into one annotation (JSON, keyed by their path); coming back
they are restored where the object still has room for them, and the annotation is
removed, so the stored v1beta2 object never carries it. Paths are dotted; a `[]`
segment steps into a list of named items (`spec.podSets[].topologyRequest.x`), and the
stored key names the item (`spec.podSets[main].topologyRequest.x`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Final

import orjson

PRESERVED_FIELDS_ANNOTATION: Final = "conversion.fleetq.dev/v1beta2-fields"

JsonObject = dict[str, Any]


def _annotations(obj: JsonObject) -> dict[str, Any]:
    metadata = obj.setdefault("metadata", {})
    annotations = metadata.get("annotations")
    if not isinstance(annotations, dict):
        annotations = {}
        metadata["annotations"] = annotations
    return annotations


def _named_items(container: Any, field: str) -> Iterator[tuple[str, JsonObject]]:
    items = container.get(field) if isinstance(container, dict) else None
    for item in items if isinstance(items, list) else ():
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            yield item["name"], item


def _take(node: Any, segments: Sequence[str], prefix: str, found: dict[str, Any]) -> None:
    if not isinstance(node, dict) or not segments:
        return
    head, rest = segments[0], segments[1:]
    if rest and rest[0] == "[]":
        for name, item in _named_items(node, head):
            _take(item, rest[1:], f"{prefix}{head}[{name}].", found)
        return
    if not rest:
        if head in node:
            found[prefix + head] = node.pop(head)
        return
    _take(node.get(head), rest, f"{prefix}{head}.", found)


def stash_fields(obj: JsonObject, paths: Sequence[str]) -> None:
    """Move the fields at `paths` out of `obj` into its preservation annotation."""
    found: dict[str, Any] = {}
    for path in paths:
        _take(obj, path.replace("[]", ".[]").split("."), "", found)
    if found:
        _annotations(obj)[PRESERVED_FIELDS_ANNOTATION] = orjson.dumps(
            found, option=orjson.OPT_SORT_KEYS
        ).decode()


def _split(concrete: str) -> list[tuple[str, str | None]]:
    """`spec.podSets[main].x` -> [("spec", None), ("podSets", "main"), ("x", None)]."""
    parts: list[tuple[str, str | None]] = []
    for segment in concrete.split("."):
        if segment.endswith("]") and "[" in segment:
            field, _, name = segment[:-1].partition("[")
            parts.append((field, name))
        else:
            parts.append((segment, None))
    return parts


def _put(obj: JsonObject, concrete: str, value: Any) -> None:
    node: Any = obj
    parts = _split(concrete)
    for field, name in parts[:-1]:
        if name is None:
            node = node.setdefault(field, {}) if isinstance(node, dict) else None
        else:
            node = dict(_named_items(node, field)).get(name)
        if not isinstance(node, dict):
            return  # the item it belonged to is gone: so is the field
    last, _ = parts[-1]
    node.setdefault(last, value)


def restore_fields(obj: JsonObject) -> None:
    """Put stashed fields back (not over ones the object sets) and drop the annotation.
    An annotation that is not a JSON object (edited by hand) is dropped as well."""
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        return
    annotations = metadata.get("annotations")
    if not isinstance(annotations, dict) or PRESERVED_FIELDS_ANNOTATION not in annotations:
        return
    raw = annotations.pop(PRESERVED_FIELDS_ANNOTATION)
    if not annotations:
        del metadata["annotations"]
    try:
        stashed = orjson.loads(raw) if isinstance(raw, str) else None
    except orjson.JSONDecodeError:
        return
    if not isinstance(stashed, dict):
        return
    for concrete, value in sorted(stashed.items()):
        _put(obj, concrete, value)

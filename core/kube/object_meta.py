"""Read identity fields from any cached object, typed struct or plain dict alike.

Caches and writers hold objects of both shapes: msgspec structs with a `metadata`
attribute (core.api types) and decoded JSON dicts (kinds fleetq does not type). These
accessors are the one place that knows both shapes, so the rest of core.kube stays generic.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _metadata(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return obj.get("metadata") or {}
    return obj.metadata


def _field(meta: Any, wire_name: str, attribute: str) -> Any:
    if isinstance(meta, Mapping):
        return meta.get(wire_name)
    return getattr(meta, attribute, None)


def name_of(obj: Any) -> str:
    return str(_field(_metadata(obj), "name", "name") or "")


def namespace_of(obj: Any) -> str:
    return str(_field(_metadata(obj), "namespace", "namespace") or "")


def resource_version_of(obj: Any) -> str:
    return str(_field(_metadata(obj), "resourceVersion", "resource_version") or "")


def uid_of(obj: Any) -> str:
    return str(_field(_metadata(obj), "uid", "uid") or "")


def labels_of(obj: Any) -> Mapping[str, str]:
    labels = _field(_metadata(obj), "labels", "labels")
    return labels if isinstance(labels, Mapping) else {}


def object_key(obj: Any) -> str:
    """`namespace/name`, or just `name` for cluster-scoped objects (client-go's key format)."""
    return make_key(namespace_of(obj), name_of(obj))


def make_key(namespace: str | None, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


def split_key(key: str) -> tuple[str, str]:
    """(namespace, name) of a key; namespace is "" for cluster-scoped objects."""
    namespace, _, name = key.rpartition("/")
    return namespace, name

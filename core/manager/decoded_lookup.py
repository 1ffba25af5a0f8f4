"""Typed, read-only views of the hub's dict caches, for readers that want API structs.

The hub's informers keep objects as decoded JSON (see `informer_set`); the webhooks'
`CachedJobContext` reads LocalQueues, ClusterQueues and AdmissionChecks as typed structs.
Rather than run a second set of informers, a `DecodedLookup` decodes the cached dict on
demand and remembers the result per resourceVersion, so repeated admission calls about
the same queue decode it once. An object that does not decode reads as absent (the same
answer as "not created yet"), which never blocks a request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, Protocol, TypeVar

import msgspec

from core.api.api_struct import ApiStruct
from core.api.codec import decode
from core.kube.object_meta import make_key, resource_version_of

T = TypeVar("T", bound=ApiStruct)


class DictStore(Protocol):
    """What a DecodedLookup reads: an ObjectStore of dicts, by name."""

    def get_by_name(self, name: str, namespace: str | None = None) -> dict[str, Any] | None: ...


class DecodedLookup(Generic[T]):
    """`get_by_name` over a dict store, answering with `kind` structs."""

    def __init__(self, store: DictStore, kind: type[T]) -> None:
        self._store = store
        self._kind = kind
        self._decoded: dict[str, tuple[str, T | None]] = {}

    def get_by_name(self, name: str, namespace: str | None = None) -> T | None:
        raw = self._store.get_by_name(name, namespace)
        key = make_key(namespace, name)
        if raw is None:
            self._decoded.pop(key, None)
            return None
        version = resource_version_of(raw)
        cached = self._decoded.get(key)
        if cached is not None and version and cached[0] == version:
            return cached[1]
        value = self._decode(raw)
        self._decoded[key] = (version, value)
        return value

    def _decode(self, raw: Mapping[str, Any]) -> T | None:
        try:
            return decode(self._kind, raw)
        except (msgspec.MsgspecError, ValueError, TypeError):
            return None

"""An in-memory store of objects keyed by `namespace/name`, with secondary indexes.

The informer is the only writer; controllers read. Indexes map a value computed from each
object (a label's value, the namespace, a spec field) to the keys of the objects having it,
so "all workloads of LocalQueue q" is a dict lookup, not a scan. Index functions must be
pure and cheap: they run on every change. Objects are shared, not copied: readers must not
mutate what they get (core.api.codec.deep_copy first).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from core.kube.object_meta import labels_of, make_key, namespace_of, object_key, resource_version_of

T = TypeVar("T")

IndexFunc = Callable[[T], Iterable[str]]


def namespace_index(obj: Any) -> Iterable[str]:
    """Index objects by namespace."""
    return (namespace_of(obj),)


def label_index(label: str) -> Callable[[Any], Iterable[str]]:
    """Index objects by the value of one label (objects without it are not indexed)."""

    def values(obj: Any) -> Iterable[str]:
        value = labels_of(obj).get(label)
        return () if value is None else (value,)

    return values


@dataclass(frozen=True, slots=True)
class StoreDiff(Generic[T]):
    """What replacing the store's content changed: added, (old, new) updated, deleted."""

    added: list[T] = field(default_factory=list)
    updated: list[tuple[T, T]] = field(default_factory=list)
    deleted: list[T] = field(default_factory=list)


class ObjectStore(Generic[T]):
    """Objects by key plus indexes. Not thread-safe; one event loop owns it."""

    def __init__(self, indexers: Mapping[str, IndexFunc[T]] | None = None) -> None:
        self._items: dict[str, T] = {}
        self._indexers: dict[str, IndexFunc[T]] = dict(indexers or {})
        self._indices: dict[str, dict[str, set[str]]] = {name: {} for name in self._indexers}
        self._values: dict[str, dict[str, tuple[str, ...]]] = {name: {} for name in self._indexers}

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[T]:
        return iter(list(self._items.values()))

    def get(self, key: str) -> T | None:
        return self._items.get(key)

    def get_by_name(self, name: str, namespace: str | None = None) -> T | None:
        return self._items.get(make_key(namespace, name))

    def keys(self) -> list[str]:
        return list(self._items)

    def list(self, namespace: str | None = None) -> list[T]:
        if namespace is None:
            return list(self._items.values())
        return [obj for obj in self._items.values() if namespace_of(obj) == namespace]

    def by_index(self, index: str, value: str) -> builtins.list[T]:
        """Objects whose index function yielded `value`."""
        return [self._items[key] for key in sorted(self.index_keys(index, value))]

    def index_keys(self, index: str, value: str) -> set[str]:
        if index not in self._indices:
            raise KeyError(f"no index named {index!r}; known: {sorted(self._indices)}")
        return set(self._indices[index].get(value, ()))

    def add_indexer(self, name: str, function: IndexFunc[T]) -> None:
        """Add an index (also over objects already stored)."""
        if name in self._indexers:
            raise ValueError(f"index {name!r} exists")
        self._indexers[name] = function
        self._indices[name] = {}
        self._values[name] = {}
        for key, obj in self._items.items():
            self._index(name, key, obj)

    # -- writes (the informer's) -----------------------------------------------------

    def upsert(self, obj: T) -> T | None:
        """Store `obj` under its key; return what it replaced."""
        key = object_key(obj)
        old = self._items.get(key)
        self._items[key] = obj
        for name in self._indexers:
            self._unindex(name, key)
            self._index(name, key, obj)
        return old

    def remove(self, key: str) -> T | None:
        old = self._items.pop(key, None)
        if old is not None:
            for name in self._indexers:
                self._unindex(name, key)
        return old

    def replace(self, items: Iterable[T]) -> StoreDiff[T]:
        """Make the store hold exactly `items`; report what changed (same RV = unchanged)."""
        diff: StoreDiff[T] = StoreDiff()
        seen: set[str] = set()
        for obj in items:
            key = object_key(obj)
            seen.add(key)
            old = self.upsert(obj)
            if old is None:
                diff.added.append(obj)
            elif resource_version_of(old) != resource_version_of(obj):
                diff.updated.append((old, obj))
        for key in [key for key in self._items if key not in seen]:
            old = self.remove(key)
            if old is not None:
                diff.deleted.append(old)
        return diff

    def _index(self, name: str, key: str, obj: T) -> None:
        values = tuple(self._indexers[name](obj))
        if not values:
            return
        self._values[name][key] = values
        index = self._indices[name]
        for value in values:
            index.setdefault(value, set()).add(key)

    def _unindex(self, name: str, key: str) -> None:
        values = self._values[name].pop(key, ())
        index = self._indices[name]
        for value in values:
            keys = index.get(value)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del index[value]

"""The engine as a `PendingWorkloadsSource`.

The engine knows queue order but not Kubernetes metadata, so owner references come from a
lookup the hub supplies (its Workload informer cache). When the engine is driven from a
thread other than the one serving requests, pass the lock that guards it: every call here
takes it, so a request never reads a queue mid-update.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence

from core.api.meta import OwnerReference
from core.engine.engine import Engine
from core.engine.model import PendingWorkload

OwnerLookup = Callable[[str, str], Sequence[OwnerReference]]
"""(namespace, workload name) -> that Workload's `metadata.ownerReferences`."""


def no_owners(namespace: str, name: str) -> Sequence[OwnerReference]:
    """The lookup to use until one is wired: every workload appears ownerless."""
    return ()


class EngineSource:
    """Answers visibility queries from an `Engine`, optionally under a lock."""

    __slots__ = ("_engine", "_lock", "_owners")

    def __init__(
        self,
        engine: Engine,
        *,
        owners: OwnerLookup = no_owners,
        lock: contextlib.AbstractContextManager[object] | None = None,
    ) -> None:
        self._engine = engine
        self._owners = owners
        self._lock: contextlib.AbstractContextManager[object] = lock or contextlib.nullcontext()

    def cluster_queue_exists(self, name: str) -> bool:
        with self._lock:
            return self._engine.cluster_queue_status(name) is not None

    def local_queue_exists(self, namespace: str, name: str) -> bool:
        with self._lock:
            return self._engine.local_queue_status(namespace, name) is not None

    def pending_workloads(self, cluster_queue: str) -> Sequence[PendingWorkload]:
        with self._lock:
            return self._engine.pending_workloads(cluster_queue)

    def pending_workloads_in_local_queue(
        self, namespace: str, name: str
    ) -> Sequence[PendingWorkload]:
        with self._lock:
            return self._engine.pending_workloads_in_local_queue(namespace, name)

    def owner_references(self, namespace: str, name: str) -> Sequence[OwnerReference]:
        return self._owners(namespace, name)

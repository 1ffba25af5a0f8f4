"""What the visibility API needs to know, and nothing more.

The API reads queue order from whoever owns it: in the hub that is the engine (see
`engine_source.EngineSource`), in tests anything with these five methods. Keeping the
seam this narrow lets the hub put a lock, a snapshot or another process behind it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from core.api.meta import OwnerReference
from core.engine.model import PendingWorkload


class PendingWorkloadsSource(Protocol):
    """Queue existence, pending workloads in queue order, and who owns each workload.

    `pending_workloads*` return every pending workload of the queue, positions filled in
    and ordered by `position_in_cluster_queue`; paging is the caller's business.
    """

    def cluster_queue_exists(self, name: str) -> bool: ...

    def local_queue_exists(self, namespace: str, name: str) -> bool: ...

    def pending_workloads(self, cluster_queue: str) -> Sequence[PendingWorkload]: ...

    def pending_workloads_in_local_queue(
        self, namespace: str, name: str
    ) -> Sequence[PendingWorkload]: ...

    def owner_references(self, namespace: str, name: str) -> Sequence[OwnerReference]: ...

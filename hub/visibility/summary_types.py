"""Wire shapes of `PendingWorkloadsSummary` and its items, field for field as upstream's JSON.

Field order follows upstream's encoder, and so do the omissions: `ownerReferences` and
`creationTimestamp` are left out when empty, while `priority` and positions are always
written (0 is a real position).
"""

from __future__ import annotations

import msgspec

from hub.visibility.group import SUMMARY_KIND


class OwnerRef(msgspec.Struct, kw_only=True, rename="camel", gc=False):
    """An owner reference as upstream reports it: identity only, no controller flags."""

    api_version: str
    kind: str
    name: str
    uid: str


class PendingWorkloadMeta(
    msgspec.Struct, kw_only=True, rename="camel", omit_defaults=True, gc=False
):
    name: str
    namespace: str
    creation_timestamp: str = ""
    owner_references: tuple[OwnerRef, ...] = ()


class PendingWorkloadItem(msgspec.Struct, kw_only=True, rename="camel", gc=False):
    """One pending workload and where it stands; positions start at 0."""

    metadata: PendingWorkloadMeta
    priority: int
    local_queue_name: str
    position_in_cluster_queue: int
    position_in_local_queue: int


class PendingWorkloadsSummary(msgspec.Struct, kw_only=True, rename="camel", gc=False):
    """The answer to a pending-workloads request: one window of the queue, in order."""

    kind: str = SUMMARY_KIND
    api_version: str
    metadata: dict[str, str] = {}
    items: list[PendingWorkloadItem]

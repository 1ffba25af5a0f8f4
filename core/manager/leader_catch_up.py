"""Catching up with the previous leader before deciding anything.

A replica that just won the Lease has been following the old leader through its
informers, which may still be a few events behind the old leader's last writes. Deciding
on that view could hand out quota the old leader already gave away (to a different
Workload, which no resourceVersion guard would catch). So the new leader first lists
every Workload (a consistent read from the apiserver) and feeds the engine whatever is
newer than what it holds; only then does it schedule.
"""

from __future__ import annotations

import asyncio

import structlog

from core.kube.backoff import ExponentialBackoff
from core.kube.client import KubeClient
from core.kube.errors import Gone, KubeError, is_retriable
from core.kube.object_meta import object_key, resource_version_of
from core.manager import watched_kinds as kinds
from core.manager.workload_feed import WorkloadFeed

RETRY_BACKOFF = ExponentialBackoff(base_seconds=0.5, cap_seconds=8.0, jitter=0.2)


async def catch_up_workloads(client: KubeClient, feed: WorkloadFeed, *, attempts: int = 5) -> int:
    """Feed every Workload version newer than the engine's; returns how many there were.

    Transient failures of the list are retried with backoff; a leader that cannot read
    the Workloads at all gives up (raises) rather than decide blind.
    """
    for attempt in range(attempts):
        try:
            items, version = await client.list_all(kinds.WORKLOADS, into=dict)
            break
        except KubeError as error:
            if attempt + 1 == attempts or not (is_retriable(error) or isinstance(error, Gone)):
                raise
            await asyncio.sleep(RETRY_BACKOFF.delay(attempt))
    newer = 0
    for item in items:
        if feed.versions.known_version(object_key(item)) != resource_version_of(item):
            feed.observe_fresh(item)  # the version gate drops anything not newer
            newer += 1
    structlog.get_logger("core.manager.leader").info(
        "leader.caught_up", workloads=len(items), newer=newer, resource_version=version
    )
    return newer

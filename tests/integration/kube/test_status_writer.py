"""Status writes guarded by resourceVersion: of two writers deciding on the same stale
copy, one wins and the other re-decides on fresh data; nothing is overwritten blindly."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from core.api.local_queue import LocalQueue
from core.api.registry import kind_info
from core.kube.client import KubeClient
from core.kube.errors import NotFound
from core.kube.status_writer import StatusWriteGaveUp, write_status
from core.kube.write_counter import WriteVerb
from devfleet.cluster_access import RunningFleet
from tests import builders

pytestmark = pytest.mark.asyncio(loop_scope="session")

LOCAL_QUEUES = kind_info("LocalQueue")


async def make_queue(kube: KubeClient, namespace: str, name: str = "lq") -> LocalQueue:
    body = builders.LocalQueue(name, namespace).cluster_queue("cq").obj()
    return await kube.create(LOCAL_QUEUES, body, into=LocalQueue)


def one_more_pending(queue: LocalQueue) -> dict[str, Any]:
    return {"pendingWorkloads": queue.status.pending_workloads + 1}


async def test_two_writers_on_one_stale_copy_lose_no_update(
    kueue_crds: RunningFleet, kube: KubeClient, namespace: str
) -> None:
    cached = await make_queue(kube, namespace)  # both writers decided on this copy

    first = await write_status(kube, LOCAL_QUEUES, cached, one_more_pending, into=LocalQueue)
    second = await write_status(kube, LOCAL_QUEUES, cached, one_more_pending, into=LocalQueue)

    assert (first.written, first.conflicts) == (True, 0)
    # The second writer's copy was stale: rejected, re-read, recomputed, written.
    assert (second.written, second.conflicts, second.attempts) == (True, 1, 2)
    fresh = await kube.get(LOCAL_QUEUES, "lq", namespace=namespace, into=LocalQueue)
    assert fresh.status.pending_workloads == 2, "a blind write would have left 1"
    assert kube.writes.count(WriteVerb.PATCH, "localqueues.kueue.x-k8s.io/status") == 3
    assert kube.writes.failed(WriteVerb.PATCH) == 1


def admit_once(queue: LocalQueue) -> dict[str, Any] | None:
    """A decision that must happen once: set Active if nobody did yet."""
    if any(c.type == "Active" for c in queue.status.conditions):
        return None
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    condition = {
        "type": "Active",
        "status": "True",
        "reason": "Ready",
        "message": "decided",
        "lastTransitionTime": now,
    }
    return {"conditions": [condition]}


async def test_the_loser_of_a_race_sees_the_winners_decision_and_writes_nothing(
    kueue_crds: RunningFleet, kube: KubeClient, client_factory: Any, namespace: str
) -> None:
    other = await client_factory()
    cached = await make_queue(kube, namespace)

    winner = await write_status(other, LOCAL_QUEUES, cached, admit_once, into=LocalQueue)
    loser = await write_status(kube, LOCAL_QUEUES, cached, admit_once, into=LocalQueue)

    assert winner.written and not loser.written
    assert loser.conflicts == 1
    assert [c.type for c in loser.object.status.conditions] == ["Active"]
    fresh = await kube.get(LOCAL_QUEUES, "lq", namespace=namespace, into=LocalQueue)
    assert len(fresh.status.conditions) == 1
    assert fresh.metadata.resource_version == winner.object.metadata.resource_version


async def test_endless_contention_and_a_deleted_object_are_reported(
    kueue_crds: RunningFleet, kube: KubeClient, client_factory: Any, namespace: str
) -> None:
    other = await client_factory()
    stale = await make_queue(kube, namespace, "busy")
    await other.patch(
        LOCAL_QUEUES,
        "busy",
        {"status": {"pendingWorkloads": 5}},
        namespace=namespace,
        subresource="status",
    )
    with pytest.raises(StatusWriteGaveUp, match="lost 1 races in a row"):
        await write_status(
            kube, LOCAL_QUEUES, stale, one_more_pending, into=LocalQueue, max_attempts=1
        )
    fresh = await kube.get(LOCAL_QUEUES, "busy", namespace=namespace, into=LocalQueue)
    assert fresh.status.pending_workloads == 5, "the stale decision must not have landed"

    await kube.delete(LOCAL_QUEUES, "busy", namespace=namespace)
    with pytest.raises(NotFound):
        await write_status(kube, LOCAL_QUEUES, fresh, one_more_pending, into=LocalQueue)

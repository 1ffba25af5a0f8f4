"""Events are created in events.k8s.io/v1 and identical ones aggregated into a series."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from core.kube.client import KubeClient
from core.kube.events import EventRecorder, EventType, reference_to
from core.kube.resources import CONFIGMAPS, EVENTS
from core.kube.write_counter import WriteVerb

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_identical_events_are_aggregated_into_one_series(
    kube: KubeClient, namespace: str
) -> None:
    target = await kube.create(
        CONFIGMAPS, {"metadata": {"name": "subject", "namespace": namespace}}
    )
    regarding = reference_to(target, kind="ConfigMap", api_version="v1")
    recorder = EventRecorder(
        kube, reporting_controller="fleetq.dev/test", reporting_instance="test-1"
    )

    for _ in range(3):
        recorder.record(regarding, "Pending", "waiting for quota", action="Schedule")
    recorder.record(regarding, "Admitted", "admitted by cq", action="Admit")
    recorder.record(
        regarding, "Pending", "a different note", type=EventType.WARNING, action="Schedule"
    )
    await recorder.flush()

    events, _ = await kube.list_all(EVENTS, namespace=namespace, into=dict)
    by_note = {event["note"]: event for event in events}
    assert sorted(by_note) == ["a different note", "admitted by cq", "waiting for quota"]
    pending = by_note["waiting for quota"]
    assert pending["series"]["count"] == 3
    assert pending["reason"] == "Pending" and pending["type"] == "Normal"
    assert (
        pending["regarding"]["name"] == "subject"
        and pending["regarding"]["uid"] == target["metadata"]["uid"]
    )
    assert pending["reportingController"] == "fleetq.dev/test"
    assert "series" not in by_note["admitted by cq"]

    # More of the same: the existing event's series grows, no new event appears.
    for _ in range(4):
        recorder.record(regarding, "Pending", "waiting for quota", action="Schedule")
    await recorder.flush()
    events, _ = await kube.list_all(EVENTS, namespace=namespace, into=dict)
    assert len(events) == 3
    grown = next(e for e in events if e["note"] == "waiting for quota")
    assert grown["metadata"]["name"] == pending["metadata"]["name"]
    assert grown["series"]["count"] == 7

    # 8 occurrences cost 3 creates and 1 series patch (plus the ConfigMap create).
    assert kube.writes.count(WriteVerb.CREATE, "events.events.k8s.io") == 3
    assert kube.writes.count(WriteVerb.PATCH, "events.events.k8s.io") == 1
    assert recorder.stats.recorded == 9


async def test_run_flushes_periodically_and_on_shutdown(kube: KubeClient, namespace: str) -> None:
    regarding = reference_to(
        {"metadata": {"name": "w", "namespace": namespace, "uid": "u-1"}},
        kind="Workload",
        api_version="kueue.x-k8s.io/v1beta2",
    )
    recorder = EventRecorder(
        kube,
        reporting_controller="fleetq.dev/test",
        reporting_instance="t",
        flush_interval_seconds=0.1,
    )
    task = asyncio.create_task(recorder.run())
    recorder.record(regarding, "QuotaReserved", "first")
    await asyncio.sleep(0.5)
    assert recorder.stats.created == 1
    recorder.record(regarding, "Admitted", "on the way out")
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)

    events: list[dict[str, Any]]
    events, _ = await kube.list_all(EVENTS, namespace=namespace, into=dict)
    assert sorted(e["reason"] for e in events) == ["Admitted", "QuotaReserved"]

"""A Workload the engine cannot read is set aside with a reason; the feed never raises.

Objects stored before the CRD typed pod templates (or written by anything that bypassed
it) reach the informer handlers as they are: a template that is a string, a spec that is
a number, containers that are not a list. Each must end up with a message naming the
field (a Warning event now, a QuotaReserved=False condition through the status writer),
and the other Workloads must be queued and admitted as usual.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from core.engine.clock import ManualClock
from core.engine.config import EngineConfig
from core.engine.model import (
    ClusterQueue,
    FlavorQuotas,
    LocalQueue,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
)
from core.kube.events import EventType
from core.manager.engine_host import EngineHost
from core.manager.event_reasons import EventReason
from core.manager.workload_feed import WorkloadFeed
from core.manager.workload_status_sync import rejected_status
from core.manager.workload_versions import WorkloadVersions

GOOD_TEMPLATE = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}


@dataclass
class Recorded:
    events: list[tuple[str, str, str, EventType]] = field(default_factory=list)

    def record(self, regarding: Any, reason: str, note: str, *, type: EventType, **_: Any) -> None:
        self.events.append((f"{regarding.namespace}/{regarding.name}", reason, note, type))


def feed() -> tuple[WorkloadFeed, Recorded]:
    host = EngineHost(EngineConfig(), clock=ManualClock())
    engine = host.engine
    engine.upsert_resource_flavor(ResourceFlavor(name="default"))
    engine.upsert_cluster_queue(
        ClusterQueue(
            name="cq",
            resource_groups=(
                ResourceGroup(
                    covered_resources=("cpu",),
                    flavors=(
                        FlavorQuotas(
                            name="default", resources=(ResourceQuota(name="cpu", nominal=4000),)
                        ),
                    ),
                ),
            ),
        )
    )
    engine.upsert_local_queue(LocalQueue(namespace="ns", name="lq", cluster_queue="cq"))
    events = Recorded()
    return WorkloadFeed(host, WorkloadVersions(lambda _: None), {}, events), events  # type: ignore[arg-type]


def workload(name: str, template: Any, version: str = "1") -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "ns", "uid": name, "resourceVersion": version},
        "spec": {
            "queueName": "lq",
            "podSets": [{"name": "main", "count": 1, "template": template}],
        },
    }


@pytest.mark.parametrize(
    ("template", "named"),
    [
        ("hello", "spec.podSets[0].template: Invalid value: Expected `object`, got `str`"),
        (
            {"spec": 42},
            "spec.podSets[0].template.spec: Invalid value: Expected `object | null`, got `int`",
        ),
        (
            {"spec": {"containers": "hello"}},
            "spec.podSets[0].template.spec.containers: Invalid value: Expected `array`",
        ),
        (
            {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1.5.3"}}}]}},
            "spec.podSets[0].template.spec.containers[0].resources.requests[cpu]: Invalid value:"
            " '1.5.3' is not a quantity",
        ),
    ],
    ids=["template-is-a-string", "spec-is-a-number", "containers-is-a-string", "bad-quantity"],
)
def test_an_unreadable_workload_gets_a_reason_and_the_others_are_admitted(
    template: Any, named: str
) -> None:
    workloads, recorded = feed()
    workloads.on_add(workload("bad", template))
    workloads.on_add(workload("good", GOOD_TEMPLATE))

    message = workloads.invalid["ns/bad"]
    assert message.startswith("The Workload cannot be queued: " + named), message
    assert recorded.events == [("ns/bad", EventReason.INVALID_OBJECT, message, EventType.WARNING)]
    assert not workloads.host.knows("ns/bad")
    status = rejected_status(workload("bad", template), message, "2025-01-01T00:00:00Z")
    (condition,) = status["conditions"]
    assert (condition["type"], condition["status"], condition["message"]) == (
        "QuotaReserved",
        "False",
        message,
    )

    result = workloads.engine.schedule()
    assert [admitted.key for admitted in result.admitted] == ["ns/good"]


def test_a_pending_workload_whose_spec_becomes_unreadable_leaves_the_queue() -> None:
    workloads, recorded = feed()
    before = workload("w", GOOD_TEMPLATE)
    workloads.on_add(before)
    assert workloads.host.knows("ns/w")
    after = workload("w", {"spec": {"containers": "hello"}}, version="2")
    workloads.on_update(before, after)
    assert not workloads.host.knows("ns/w")
    assert "spec.podSets[0].template.spec.containers" in workloads.invalid["ns/w"]
    assert workloads.engine.schedule().admitted == []
    assert [event[1] for event in recorded.events] == [EventReason.INVALID_OBJECT]

    fixed = workload("w", GOOD_TEMPLATE, version="3")
    workloads.on_update(after, fixed)
    assert "ns/w" not in workloads.invalid
    assert [admitted.key for admitted in workloads.engine.schedule().admitted] == ["ns/w"]

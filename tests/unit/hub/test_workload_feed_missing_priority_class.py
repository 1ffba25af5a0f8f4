"""A Workload naming a WorkloadPriorityClass that does not exist is queued as upstream
queues it: at its `spec.priority`, neither refused nor held.

Upstream's Workload webhook does not look classes up, and its scheduler orders by
`spec.priority` (pkg/util/priority); the class is read only when a job's Workload is built
(jobframework `ExtractPriority`, where a missing class is an error and no Workload is
made: see test_batch_job_workload_builder) and when a class changes (its
workloadpriorityclass_controller, fleetq's WorkloadPrioritySync). Refusing such a
Workload would also refuse the copies an upstream MultiKueue manager sends to a worker
that has no copy of the manager's classes.
"""

from __future__ import annotations

from typing import Any

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
from core.manager.engine_host import EngineHost
from core.manager.workload_feed import WorkloadFeed
from core.manager.workload_versions import WorkloadVersions

TEMPLATE = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}


class NoEvents:
    def record(self, *args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"no event expected, got {args}")


def workload(name: str, created: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": name,
            "resourceVersion": "1",
            "creationTimestamp": created,
        },
        "spec": {"queueName": "lq", "podSets": [{"name": "main", "template": TEMPLATE}], **spec},
    }


def test_a_workload_naming_a_missing_class_is_queued_at_its_spec_priority() -> None:
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
                            name="default", resources=(ResourceQuota(name="cpu", nominal=1000),)
                        ),
                    ),
                ),
            ),
        )
    )
    engine.upsert_local_queue(LocalQueue(namespace="ns", name="lq", cluster_queue="cq"))
    feed = WorkloadFeed(host, WorkloadVersions(lambda _: None), {}, NoEvents())  # type: ignore[arg-type]

    feed.on_add(workload("first", "2025-01-01T00:00:00Z"))
    feed.on_add(
        workload(
            "classed",
            "2025-01-01T00:00:05Z",
            priority=5,
            priorityClassRef={
                "group": "kueue.x-k8s.io",
                "kind": "WorkloadPriorityClass",
                "name": "does-not-exist",
            },
        )
    )

    assert feed.invalid == {}
    assert [p.name for p in engine.pending_workloads("cq")] == ["classed", "first"]
    assert engine.pending_workloads("cq")[0].priority == 5
    assert [a.key for a in engine.schedule().admitted] == ["ns/classed"]

"""Workloads whose resource lists are wrong stay pending and never change quota usage.

Upstream keeps a workload whose requests exceed its limits pending with "resources
validation failed: ..." (pkg/workload/resources.go, ValidateResources); fleetq treats a
negative quantity the same way, and never lets one lower a ClusterQueue's usage.
"""

from __future__ import annotations

from typing import Any

import pytest

from core.engine.clock import ManualClock
from core.engine.engine import Engine
from core.engine.model import (
    Admission,
    ClusterQueue,
    Condition,
    FlavorQuotas,
    LocalQueue,
    PodSetAssignment,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    Workload,
    WorkloadStatus,
)
from core.engine.pod_templates import pod_requests, pod_set_from_template
from core.engine.resource_validation import resource_validation_message, template_resource_problems


def engine(cpu: int = 8000) -> Engine:
    e = Engine(None, ManualClock())
    e.upsert_resource_flavor(ResourceFlavor(name="default"))
    e.upsert_cluster_queue(
        ClusterQueue(
            name="cq",
            resource_groups=(
                ResourceGroup(
                    covered_resources=("cpu",),
                    flavors=(
                        FlavorQuotas(
                            name="default", resources=(ResourceQuota(name="cpu", nominal=cpu),)
                        ),
                    ),
                ),
            ),
        )
    )
    e.upsert_local_queue(LocalQueue(namespace="ns", name="lq", cluster_queue="cq"))
    return e


def container(name: str = "c", **resources: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "resources": resources}


def workload(name: str, *containers: dict[str, Any], created: float = 0.0, **spec: Any) -> Workload:
    template = {"spec": {"containers": list(containers), **spec}}
    return Workload(
        namespace="ns",
        name=name,
        uid=name,
        queue_name="lq",
        creation_time=created,
        pod_sets=(pod_set_from_template(name="main", count=1, template=template),),
    )


def pending_message(e: Engine, key: str) -> str:
    status = e.workload_status(key)
    assert status is not None
    condition = status.condition("QuotaReserved")
    assert condition is not None and not condition.status, condition
    assert condition.reason == "Pending"
    return condition.message


def test_a_negative_request_is_inadmissible_and_cannot_make_room_for_others() -> None:
    e = engine(cpu=8000)
    e.add_workload(workload("negative", container(requests={"cpu": "-4"}), created=1))
    e.add_workload(workload("eight", container(requests={"cpu": "8"}), created=2))
    e.add_workload(workload("four", container(requests={"cpu": "4"}), created=3))
    admitted = []
    for _ in range(4):
        admitted += [a.key for a in e.schedule().admitted]
    assert admitted == ["ns/eight"]
    assert pending_message(e, "ns/negative") == (
        "resources validation failed: spec.podSets[0].template.spec.containers[0]"
        '.resources.requests[cpu]: Invalid value: "-4": must be greater than or equal to 0'
    )
    assert "ns/four" in e.inadmissible_workloads("cq")
    assert e.cluster_queue_usage("cq") == {("default", "cpu"): 8000}


def test_requests_above_limits_are_inadmissible_with_upstreams_message() -> None:
    e = engine()
    e.add_workload(
        workload(
            "greedy",
            container(requests={"cpu": "2", "memory": "2Gi"}, limits={"cpu": "1", "memory": "1Gi"}),
        )
    )
    result = e.schedule()
    assert result.admitted == []
    assert pending_message(e, "ns/greedy") == (
        "resources validation failed: spec.podSets[0].template.spec.containers[0]:"
        ' Invalid value: ["cpu","memory"]: requests must not exceed its limits'
    )
    assert e.cluster_queue_usage("cq") == {}


def test_requests_within_limits_are_admitted() -> None:
    e = engine()
    e.add_workload(workload("fine", container(requests={"cpu": "1"}, limits={"cpu": "2"})))
    assert [a.key for a in e.schedule().admitted] == ["ns/fine"]


def test_several_problems_are_listed_like_upstreams_aggregate() -> None:
    spec = {
        "initContainers": [container("init", requests={"cpu": "2"}, limits={"cpu": "1"})],
        "containers": [container("app", limits={"memory": "-1Gi"})],
        "resources": {"requests": {"cpu": "3"}, "limits": {"cpu": "2"}},
    }
    problems = template_resource_problems(spec)
    assert problems == (
        'initContainers[0]: Invalid value: ["cpu"]: requests must not exceed its limits',
        'containers[0].resources.limits[memory]: Invalid value: "-1Gi":'
        " must be greater than or equal to 0",
        'resources: Invalid value: ["cpu"]: requests must not exceed its limits',
    )
    message = resource_validation_message([(), problems[:2]])
    assert message == (
        "resources validation failed: [spec.podSets[1].template.spec.initContainers[0]:"
        ' Invalid value: ["cpu"]: requests must not exceed its limits,'
        " spec.podSets[1].template.spec.containers[0].resources.limits[memory]:"
        ' Invalid value: "-1Gi": must be greater than or equal to 0]'
    )
    assert resource_validation_message([(), ()]) is None


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"containers": [container(requests={"cpu": "-2"})]}, {}),
        (
            {
                "containers": [
                    container(requests={"cpu": "-2"}),
                    container("b", limits={"cpu": "3"}),
                ]
            },
            {"cpu": 1000},
        ),
        ({"containers": [container(requests={"cpu": "1"})], "overhead": {"cpu": "-2"}}, {}),
    ],
    ids=["alone", "summed-with-others", "through-overhead"],
)
def test_a_negative_effective_request_is_never_counted(
    spec: dict[str, Any], expected: dict[str, int]
) -> None:
    assert pod_requests(spec) == expected


def test_an_adopted_admission_with_negative_usage_never_lowers_usage() -> None:
    e = engine(cpu=8000)
    now = 0.0
    reserved = WorkloadStatus(
        conditions=(
            Condition(
                type="QuotaReserved",
                status=True,
                reason="QuotaReserved",
                message="Quota reserved in ClusterQueue cq",
                last_transition_time=now,
            ),
        ),
        admission=Admission(
            cluster_queue="cq",
            pod_set_assignments=(
                PodSetAssignment(
                    name="main",
                    flavors={"cpu": "default"},
                    resource_usage={"cpu": -4000},
                    count=1,
                ),
            ),
        ),
    )
    negative = workload("negative", container(requests={"cpu": "-4"}))
    e.add_workload(
        Workload(
            namespace=negative.namespace,
            name=negative.name,
            uid=negative.uid,
            queue_name=negative.queue_name,
            pod_sets=negative.pod_sets,
            status=reserved,
        )
    )
    assert e.cluster_queue_usage("cq").get(("default", "cpu"), 0) == 0
    e.add_workload(workload("eight", container(requests={"cpu": "8"}), created=1))
    e.add_workload(workload("four", container(requests={"cpu": "4"}), created=2))
    admitted = []
    for _ in range(3):
        admitted += [a.key for a in e.schedule().admitted]
    assert admitted == ["ns/eight"]
    assert e.cluster_queue_usage("cq") == {("default", "cpu"): 8000}

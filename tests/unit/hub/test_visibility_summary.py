"""The visibility API's answers, built from a real engine's queues.

The world: one ClusterQueue with room for a single one-CPU workload, which a high-priority
workload holds, and five more waiting in two LocalQueues of different namespaces. Queue
order is BestEffortFIFO: higher priority first, then older first, so the expected order is
written out below by hand from the priorities and creation times.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import pytest
from multidict import MultiDict

from core.api.meta import OwnerReference
from core.engine.clock import ManualClock
from core.engine.engine import Engine
from core.engine.model import (
    ClusterQueue,
    FlavorQuotas,
    LocalQueue,
    Namespace,
    PodSet,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    Workload,
)
from hub.visibility.discovery import api_group, api_group_list, api_resource_list
from hub.visibility.engine_source import EngineSource
from hub.visibility.group import VisibilityVersion
from hub.visibility.query import DEFAULT_LIMIT, MAX_LIMIT, PendingWorkloadOptions, parse_options
from hub.visibility.status import Status, StatusReason
from hub.visibility.summary import cluster_queue_summary, local_queue_summary
from hub.visibility.summary_types import PendingWorkloadsSummary

EPOCH = 1_700_000_000  # 2023-11-14T22:13:20Z
CQ = "cq"
LQ_A = ("team-a", "lq-a")
LQ_B = ("team-b", "lq-b")
# name, LocalQueue, priority, seconds after EPOCH it was created
PENDING = [
    ("a1", LQ_A, 0, 10),
    ("a2", LQ_A, 5, 20),
    ("b1", LQ_B, 0, 5),
    ("b2", LQ_B, 10, 30),
    ("a3", LQ_A, 0, 40),
]
CQ_ORDER = ["b2", "a2", "b1", "a1", "a3"]
JOB_OWNER = OwnerReference(
    api_version="batch/v1", kind="Job", name="job-a1", uid="uid-a1", controller=True
)


def _workload(name: str, lq: tuple[str, str], priority: int, created: float) -> Workload:
    namespace, queue = lq
    return Workload(
        namespace=namespace,
        name=name,
        uid=f"uid-{name}",
        queue_name=queue,
        pod_sets=(PodSet(count=1, requests={"cpu": 1000}),),
        priority=priority,
        creation_time=created,
    )


def _engine() -> Engine:
    engine = Engine(clock=ManualClock(EPOCH))
    engine.upsert_resource_flavor(ResourceFlavor(name="default"))
    for ns in ("team-a", "team-b"):
        engine.upsert_namespace(Namespace(name=ns))
    quota = FlavorQuotas(name="default", resources=(ResourceQuota(name="cpu", nominal=1000),))
    engine.upsert_cluster_queue(
        ClusterQueue(
            name=CQ, resource_groups=(ResourceGroup(covered_resources=("cpu",), flavors=(quota,)),)
        )
    )
    for ns, name in (LQ_A, LQ_B):
        engine.upsert_local_queue(LocalQueue(namespace=ns, name=name, cluster_queue=CQ))
    engine.upsert_local_queue(LocalQueue(namespace="team-a", name="orphan", cluster_queue="gone"))
    engine.add_workload(_workload("running", LQ_A, 100, EPOCH))
    assert [a.key for a in engine.schedule().admitted] == ["team-a/running"]
    for name, lq, priority, created in PENDING:
        engine.add_workload(_workload(name, lq, priority, EPOCH + created))
    assert engine.schedule().admitted == []
    return engine


def _owners(namespace: str, name: str) -> Sequence[OwnerReference]:
    return [JOB_OWNER] if (namespace, name) == ("team-a", "a1") else []


@pytest.fixture
def engine() -> Engine:
    return _engine()


@pytest.fixture
def source(engine: Engine) -> EngineSource:
    return EngineSource(engine, owners=_owners)


def _summary(result: PendingWorkloadsSummary | Status) -> PendingWorkloadsSummary:
    assert isinstance(result, PendingWorkloadsSummary), result
    return result


def _wire(document: msgspec.Struct) -> Any:
    return msgspec.json.decode(msgspec.json.encode(document))


def _rows(summary: PendingWorkloadsSummary) -> list[tuple[str, int, int]]:
    return [
        (i.metadata.name, i.position_in_cluster_queue, i.position_in_local_queue)
        for i in summary.items
    ]


# --------------------------------------------------------------------------- ClusterQueue


def test_cluster_queue_lists_every_pending_workload_in_queue_order(source: EngineSource) -> None:
    summary = _summary(cluster_queue_summary(source, CQ))
    assert _rows(summary) == [("b2", 0, 0), ("a2", 1, 0), ("b1", 2, 1), ("a1", 3, 1), ("a3", 4, 2)]
    assert [i.priority for i in summary.items] == [10, 5, 0, 0, 0]
    assert [i.local_queue_name for i in summary.items] == ["lq-b", "lq-a", "lq-b", "lq-a", "lq-a"]
    assert [i.metadata.namespace for i in summary.items] == [
        "team-b",
        "team-a",
        "team-b",
        "team-a",
        "team-a",
    ]


def test_cluster_queue_window_keeps_absolute_positions(source: EngineSource) -> None:
    options = PendingWorkloadOptions(offset=1, limit=2)
    summary = _summary(cluster_queue_summary(source, CQ, options))
    assert _rows(summary) == [("a2", 1, 0), ("b1", 2, 1)]


def test_offset_past_the_end_gives_an_empty_list(source: EngineSource) -> None:
    summary = _summary(cluster_queue_summary(source, CQ, PendingWorkloadOptions(offset=5)))
    assert summary.items == []
    assert _wire(summary)["items"] == []


def test_admitting_the_head_moves_everyone_up(engine: Engine, source: EngineSource) -> None:
    engine.finish("team-a/running")
    assert [a.key for a in engine.schedule().admitted] == ["team-b/b2"]
    summary = _summary(cluster_queue_summary(source, CQ))
    assert _rows(summary) == [("a2", 0, 0), ("b1", 1, 0), ("a1", 2, 1), ("a3", 3, 2)]


def test_unknown_cluster_queue_is_a_not_found_status(source: EngineSource) -> None:
    status = cluster_queue_summary(source, "nope")
    assert isinstance(status, Status)
    assert _wire(status) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'clusterqueue.visibility.kueue.x-k8s.io "nope" not found',
        "reason": "NotFound",
        "details": {"name": "nope", "group": "visibility.kueue.x-k8s.io", "kind": "clusterqueue"},
        "code": 404,
    }


def test_default_limit_caps_a_long_queue_at_a_thousand(engine: Engine) -> None:
    for n in range(DEFAULT_LIMIT + 5):
        engine.add_workload(_workload(f"bulk-{n:04d}", LQ_B, -1, EPOCH + 100 + n))
    source = EngineSource(engine)
    summary = _summary(cluster_queue_summary(source, CQ))
    assert len(summary.items) == DEFAULT_LIMIT
    assert summary.items[-1].position_in_cluster_queue == DEFAULT_LIMIT - 1
    rest = _summary(cluster_queue_summary(source, CQ, PendingWorkloadOptions(offset=1000)))
    assert [i.metadata.name for i in rest.items] == [f"bulk-{n:04d}" for n in range(995, 1005)]
    assert rest.items[0].position_in_local_queue == 2 + 995


# --------------------------------------------------------------------------- LocalQueue


def test_local_queue_lists_only_its_own_workloads(source: EngineSource) -> None:
    summary = _summary(local_queue_summary(source, *LQ_A))
    assert _rows(summary) == [("a2", 1, 0), ("a1", 3, 1), ("a3", 4, 2)]
    assert {i.local_queue_name for i in summary.items} == {"lq-a"}


def test_local_queue_window_counts_within_the_local_queue(source: EngineSource) -> None:
    window = PendingWorkloadOptions(offset=1, limit=1)
    summary = _summary(local_queue_summary(source, *LQ_A, window))
    assert _rows(summary) == [("a1", 3, 1)]


def test_local_queue_is_looked_up_in_its_namespace(source: EngineSource) -> None:
    status = local_queue_summary(source, "team-b", "lq-a")
    assert isinstance(status, Status)
    assert status.code == 404
    assert status.reason is StatusReason.NOT_FOUND
    assert status.message == 'localqueue.visibility.kueue.x-k8s.io "lq-a" not found'
    assert _wire(status)["details"]["kind"] == "localqueue"


def test_local_queue_of_a_missing_cluster_queue_has_nothing_pending(source: EngineSource) -> None:
    assert _summary(local_queue_summary(source, "team-a", "orphan")).items == []


# --------------------------------------------------------------------------- wire shape


def test_summary_wire_shape_matches_upstream(source: EngineSource) -> None:
    wire = _wire(_summary(local_queue_summary(source, *LQ_A)))
    assert list(wire) == ["kind", "apiVersion", "metadata", "items"]
    assert wire["kind"] == "PendingWorkloadsSummary"
    assert wire["apiVersion"] == "visibility.kueue.x-k8s.io/v1beta2"
    assert wire["metadata"] == {}
    assert wire["items"][0] == {
        "metadata": {
            "name": "a2",
            "namespace": "team-a",
            "creationTimestamp": "2023-11-14T22:13:40Z",
        },
        "priority": 5,
        "localQueueName": "lq-a",
        "positionInClusterQueue": 1,
        "positionInLocalQueue": 0,
    }
    # Owner references carry identity only, as upstream copies them.
    assert wire["items"][1]["metadata"]["ownerReferences"] == [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "job-a1", "uid": "uid-a1"}
    ]


def test_v1beta1_differs_only_in_api_version(source: EngineSource) -> None:
    beta1 = _wire(_summary(cluster_queue_summary(source, CQ, None, VisibilityVersion.V1BETA1)))
    beta2 = _wire(_summary(cluster_queue_summary(source, CQ, None, VisibilityVersion.V1BETA2)))
    assert beta1["apiVersion"] == "visibility.kueue.x-k8s.io/v1beta1"
    assert {**beta1, "apiVersion": beta2["apiVersion"]} == beta2


def test_unknown_creation_time_is_omitted(engine: Engine) -> None:
    engine.add_workload(_workload("undated", LQ_B, -5, 0.0))
    summary = _summary(local_queue_summary(EngineSource(engine), *LQ_B))
    last = _wire(summary)["items"][-1]["metadata"]
    assert last == {"name": "undated", "namespace": "team-b"}


# --------------------------------------------------------------------------- query parameters


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({}, PendingWorkloadOptions(offset=0, limit=1000)),
        ({"offset": "3"}, PendingWorkloadOptions(offset=3, limit=1000)),
        ({"limit": "0"}, PendingWorkloadOptions(offset=0, limit=1000)),
        ({"limit": "+7", "offset": "0"}, PendingWorkloadOptions(offset=0, limit=7)),
        ({"limit": str(MAX_LIMIT)}, PendingWorkloadOptions(offset=0, limit=MAX_LIMIT)),
        ({"limit": "5", "watch": "true"}, PendingWorkloadOptions(offset=0, limit=5)),
    ],
)
def test_query_parameters_are_defaulted_like_upstream(
    query: dict[str, str], expected: PendingWorkloadOptions
) -> None:
    assert parse_options(query) == expected


def test_first_value_of_a_repeated_parameter_wins() -> None:
    assert parse_options(MultiDict([("limit", "2"), ("limit", "9")])) == PendingWorkloadOptions(
        limit=2
    )


@pytest.mark.parametrize(
    ("query", "mentions"),
    [
        ({"limit": "abc"}, '"limit": "abc" is not an integer'),
        ({"offset": "1.5"}, '"offset": "1.5" is not an integer'),
        ({"offset": " 1"}, "is not an integer"),
        ({"limit": ""}, "is not an integer"),
        ({"limit": "1_0"}, "is not an integer"),
        ({"offset": "-1"}, '"offset" must not be negative'),
        ({"limit": "-5"}, '"limit" must not be negative'),
        ({"limit": str(MAX_LIMIT + 1)}, f"at most {MAX_LIMIT}"),
        ({"offset": str(2**63)}, "out of range"),
    ],
)
def test_bad_numbers_are_a_bad_request(query: dict[str, str], mentions: str) -> None:
    status = parse_options(query)
    assert isinstance(status, Status)
    assert (status.code, status.reason) == (400, StatusReason.BAD_REQUEST)
    assert mentions in status.message
    assert "details" not in _wire(status)


# --------------------------------------------------------------------------- discovery


def test_group_document_prefers_v1beta2() -> None:
    assert _wire(api_group()) == {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": "visibility.kueue.x-k8s.io",
        "versions": [
            {"groupVersion": "visibility.kueue.x-k8s.io/v1beta2", "version": "v1beta2"},
            {"groupVersion": "visibility.kueue.x-k8s.io/v1beta1", "version": "v1beta1"},
        ],
        "preferredVersion": {
            "groupVersion": "visibility.kueue.x-k8s.io/v1beta2",
            "version": "v1beta2",
        },
    }
    groups = _wire(api_group_list())
    assert groups["kind"] == "APIGroupList"
    assert [g["name"] for g in groups["groups"]] == ["visibility.kueue.x-k8s.io"]
    assert "kind" not in groups["groups"][0]


@pytest.mark.parametrize("version", list(VisibilityVersion))
def test_resource_list_offers_the_two_pendingworkloads_subresources(
    version: VisibilityVersion,
) -> None:
    wire = _wire(api_resource_list(version))
    assert wire["kind"] == "APIResourceList"
    assert wire["groupVersion"] == f"visibility.kueue.x-k8s.io/{version.value}"
    table = {
        r["name"]: (r["singularName"], r["namespaced"], r["kind"], r["verbs"])
        for r in wire["resources"]
    }
    assert table == {
        "clusterqueues": ("clusterqueue", False, "PendingWorkloadsSummary", []),
        "clusterqueues/pendingworkloads": ("", False, "PendingWorkloadsSummary", ["get"]),
        "localqueues": ("localqueue", True, "PendingWorkloadsSummary", []),
        "localqueues/pendingworkloads": ("", True, "PendingWorkloadsSummary", ["get"]),
    }
    assert [r["name"] for r in wire["resources"]] == sorted(table)

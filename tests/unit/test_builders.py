"""tests/builders, and proof that the helpers rewritten onto it send what they sent before.

Integration and e2e tests cannot run here, so their helpers are called with fake clients
that record every body, and the bodies are compared with builders_golden.json: what the
hand-written helpers produced for the same calls, recorded by running them before they
moved onto the builders. Comparison is dict equality (JSON member order means nothing to
an apiserver).
"""

from __future__ import annotations

import copy
import json
import types
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from devfleet.sample_jobs import gpu_job, gpu_jobset
from tests.builders import (
    GPU,
    KUEUE_API_VERSION,
    AdmissionCheck,
    ClusterQueue,
    Cohort,
    FlavorQuotas,
    Job,
    LocalQueue,
    MultiKueueCluster,
    MultiKueueConfig,
    PodTemplate,
    ResourceFlavor,
    WorkerCapacity,
    Workload,
    WorkloadPriorityClass,
    kwok_job,
    kwok_jobset,
    owner_reference,
    pod_set_assignment,
)

GOLDEN: dict[str, Any] = json.loads((Path(__file__).parent / "builders_golden.json").read_text())
INLINE = GOLDEN["inline"]


# -- the builders --------------------------------------------------------------------------


def test_obj_is_a_fresh_copy_and_a_clone_branches_off() -> None:
    base = Job("a", "ns").queue("lq")
    first = base.obj()
    first["metadata"]["labels"]["x"] = "y"
    variant = base.clone().suspend()
    assert base.obj()["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "lq"}
    assert "suspend" not in base.obj()["spec"]
    assert variant.obj()["spec"]["suspend"] is True


def test_maps_given_empty_are_written_and_missing_ones_are_not() -> None:
    job = Job("a").annotations({}).node_selector({}).obj()
    assert job["metadata"] == {"name": "a", "annotations": {}}
    assert job["spec"]["template"]["spec"]["nodeSelector"] == {}
    assert "spec" not in ResourceFlavor("f").obj()
    assert ResourceFlavor("f").spec().obj()["spec"] == {}
    assert Workload("w").finalizers().obj()["metadata"]["finalizers"] == []


def test_a_job_starts_with_one_container_and_nothing_else() -> None:
    assert Job("a", "ns").obj() == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "a", "namespace": "ns"},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "registry.invalid/train:latest"}],
                }
            }
        },
    }


def test_job_fields() -> None:
    job = (
        Job("a")
        .priority_class("high")
        .prebuilt_workload("wl")
        .multikueue_origin("o")
        .completion_mode("Indexed")
        .parallelism(2)
        .completions(4)
        .managed_by()
        .toleration("gpu", effect="NoSchedule")
        .toleration("pool", "a")
        .limit(GPU, "1")
        .command("sleep", "1")
        .kwok_run(2.5, exact=False)
        .obj()
    )
    assert job["metadata"]["labels"] == {
        "kueue.x-k8s.io/priority-class": "high",
        "kueue.x-k8s.io/prebuilt-workload-name": "wl",
        "kueue.x-k8s.io/multikueue-origin": "o",
    }
    spec = job["spec"]
    assert (spec["completionMode"], spec["parallelism"], spec["completions"]) == ("Indexed", 2, 4)
    assert spec["managedBy"] == "kueue.x-k8s.io/multikueue"
    pod = spec["template"]
    assert pod["metadata"] == {"annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": "2.5s"}}
    assert pod["spec"]["tolerations"] == [
        {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "pool", "operator": "Equal", "value": "a"},
    ]
    assert pod["spec"]["containers"][0]["resources"] == {"limits": {GPU: "1"}}
    assert pod["spec"]["containers"][0]["command"] == ["sleep", "1"]


@pytest.mark.parametrize(
    "shape",
    [
        {"gpus_per_pod": 4, "pods": 3, "run_seconds": 2},
        {"gpus_per_pod": 0, "pods": 1, "run_seconds": 600},
        {"gpus_per_pod": 1, "pods": 2, "run_seconds": 1.5, "node_selector": {"pool": "cpu"}},
    ],
)
def test_kwok_job_is_devfleets_gpu_job(shape: dict[str, Any]) -> None:
    assert kwok_job("train", **shape).obj() == gpu_job("train", **shape)


def test_kwok_jobset_is_devfleets_gpu_jobset() -> None:
    shape: dict[str, Any] = {"workers": 3, "gpus_per_worker": 4, "run_seconds": 2}
    assert kwok_jobset("llm", **shape).obj() == gpu_jobset("llm", **shape)


def test_a_resource_group_covers_its_flavors_resources_in_first_seen_order() -> None:
    queue = ClusterQueue("cq").resource_group(
        FlavorQuotas("a", {"cpu": "1"}),
        FlavorQuotas("b").resource("memory", "1Gi", lending_limit="0").resource("cpu", 2),
    )
    (group,) = queue.obj()["spec"]["resourceGroups"]
    assert group["coveredResources"] == ["cpu", "memory"]
    assert group["flavors"][1]["resources"] == [
        {"name": "memory", "nominalQuota": "1Gi", "lendingLimit": "0"},
        {"name": "cpu", "nominalQuota": 2},
    ]
    explicit = ClusterQueue("cq").resource_group(FlavorQuotas("a"), covered=["cpu"]).obj()
    assert explicit["spec"]["resourceGroups"][0]["coveredResources"] == ["cpu"]


def test_cluster_queue_and_cohort_policies() -> None:
    spec = (
        ClusterQueue("cq")
        .only_namespace("team")
        .cohort("co")
        .preemption(within_cluster_queue="LowerPriority", reclaim_within_cohort="Any")
        .admission_checks("a", "b")
        .queueing_strategy("StrictFIFO")
        .stop_policy("Hold")
        .fair_sharing_weight("2")
        .obj()["spec"]
    )
    assert spec == {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "team"}},
        "cohortName": "co",
        "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
        "admissionChecksStrategy": {"admissionChecks": [{"name": "a"}, {"name": "b"}]},
        "queueingStrategy": "StrictFIFO",
        "stopPolicy": "Hold",
        "fairSharing": {"weight": "2"},
    }
    cohort = Cohort("root-a").parent("root").resource_group(FlavorQuotas("f", {"cpu": "1"}))
    assert cohort.obj()["spec"]["parentName"] == "root"
    flavor = ResourceFlavor("f").node_labels({"pool": "a"}).node_taint("gpu", "true")
    assert flavor.obj()["spec"] == {
        "nodeLabels": {"pool": "a"},
        "nodeTaints": [{"key": "gpu", "effect": "NoSchedule", "value": "true"}],
    }
    assert LocalQueue("lq", "ns").stop_policy("HoldAndDrain").obj()["spec"] == {
        "stopPolicy": "HoldAndDrain"
    }


def test_a_workload_with_status() -> None:
    template = PodTemplate()
    workload = (
        Workload("w", "ns")
        .queue("lq")
        .priority_class("high")
        .active(False)
        .pod_set("main", 3, template=template, requests={"cpu": "2"}, min_count=2)
        .owned_by_job("j", "uid-j")
        .condition("QuotaReserved", reason="QuotaReserved", message="")
        .admission("cq", pod_set_assignment({"cpu": "f"}, {"cpu": "6"}, count=3))
        .admission_check("mk", "Ready", last_transition_time="2026-01-01T00:00:00Z")
        .cluster_name("w1")
        .nominated_clusters("w1", "w2")
        .obj()
    )
    assert "resources" not in template.obj()["spec"]["containers"][0], "template not edited"
    (pod_set,) = workload["spec"]["podSets"]
    assert (pod_set["count"], pod_set["minCount"]) == (3, 2)
    assert pod_set["template"]["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "2"}}
    assert workload["spec"]["priorityClassRef"]["kind"] == "WorkloadPriorityClass"
    assert workload["metadata"]["ownerReferences"] == [
        owner_reference("batch/v1", "Job", "j", "uid-j")
    ]
    assert workload["status"] == {
        "conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": ""}
        ],
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [
                {"name": "main", "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": "6"}, "count": 3}
            ],
        },
        "admissionChecks": [
            {
                "name": "mk",
                "state": "Ready",
                "message": "",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
        "clusterName": "w1",
        "nominatedClusterNames": ["w1", "w2"],
    }


def test_from_obj_and_set_edit_a_copy() -> None:
    original = gpu_job("a", gpus_per_pod=0, pods=1, run_seconds=1)
    edited = Job.from_obj(original).set("spec.ttlSecondsAfterFinished", 5).queue("lq").obj()
    assert edited["spec"]["ttlSecondsAfterFinished"] == 5
    assert "labels" not in original["metadata"] and "ttlSecondsAfterFinished" not in original
    assert WorkloadPriorityClass("p", 5).description("d").obj() == {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": "p"},
        "value": 5,
        "description": "d",
    }


# -- fakes that record what helpers send ----------------------------------------------------


class FakeKube:
    """KubeClient's create/patch/get: creations recorded, uids made up."""

    def __init__(self) -> None:
        self.sent: list[list[Any]] = []

    async def create(
        self, resource: Any, body: dict[str, Any], namespace: Any = None, **_: Any
    ) -> Any:
        self.sent.append(["create", resource.plural, namespace, copy.deepcopy(body)])
        made = copy.deepcopy(body)
        made["metadata"].update(uid=f"uid-{body['metadata']['name']}", resourceVersion="1")
        return made

    async def patch(self, resource: Any, name: str, body: Any, **_: Any) -> None:
        self.sent.append(["patch", resource.plural, name, "<patch>"])

    async def get(self, resource: Any, name: str, **_: Any) -> Any:
        admitted = {"conditions": [{"type": "Admitted", "status": "True"}]}
        return {"metadata": {"name": name}, "status": admitted}


class FakeRest:
    """The CLI tests' REST helper: POSTs recorded, status applies noted."""

    def __init__(self) -> None:
        self.sent: list[list[Any]] = []

    def request(self, method: str, path: str, body: Any = None) -> Any:
        self.sent.append([method, path, copy.deepcopy(body)])
        made = copy.deepcopy(body or {})
        made.setdefault("metadata", {})["uid"] = "uid-x"
        return made

    def apply(self, path: str, body: Any, subresource: str | None = None) -> None:
        self.sent.append(["APPLY", path, "<status>"])


def with_api_version(obj: dict[str, Any]) -> dict[str, Any]:
    """e2e helpers that left apiVersion to the create call, which put this one first."""
    return {"apiVersion": KUEUE_API_VERSION, **obj}


# -- integration helpers -------------------------------------------------------------------


async def test_the_hub_cluster_fixture_sends_what_it_did() -> None:
    from tests.integration.hub.conftest import Cluster

    kube = FakeKube()
    cluster = Cluster(kube, "ns-1")  # type: ignore[arg-type]
    cluster.suffix = "abc123"
    await cluster.flavor("gpu", {"pool": "a"})
    await cluster.flavor("empty", {})
    await cluster.cluster_queue("cq", "rf-x", "4")
    await cluster.cluster_queue(
        "cq2",
        "rf",
        "2",
        preemption={"withinClusterQueue": "LowerPriority"},
        borrowing_limit="1",
        cohortName="co",
        stopPolicy="Hold",
    )
    await cluster.local_queue("lq", "cq-x")
    await cluster.priority_class("high", 100)
    await cluster.job("j", "lq")
    await cluster.job(
        "j2",
        "lq",
        cpu="2",
        priority_class="p",
        node_selector={"a": "b"},
        parallelism=3,
        annotations={"x": "y"},
    )
    await cluster.workload("w", "lq")
    await cluster.workload("w2", "lq", cpu="3", priority=5, finalizers=["f"])
    assert kube.sent == GOLDEN["hub"]

    checks = FakeKube()
    check_cluster = Cluster(checks, "ns-ac")  # type: ignore[arg-type]
    check_cluster.suffix = "abc123"

    async def no_status(*_: Any, **__: Any) -> None:
        return None

    check_cluster.patch_status = no_status  # type: ignore[method-assign]
    from tests.integration.hub.test_admission_checks import _admission_check

    await _admission_check(check_cluster, "gate")
    assert checks.sent == GOLDEN["admission_check"]


async def test_the_dispatch_harness_sends_what_it_did() -> None:
    from tests.integration.multikueue import dispatch_harness as harness

    assert GOLDEN["POD_TEMPLATE"] == harness.POD_TEMPLATE
    manager, w1, w2 = FakeKube(), FakeKube(), FakeKube()
    fleet = harness.Fleet(types.SimpleNamespace(workers=[]), manager, "ns-mk")  # type: ignore[arg-type]
    fleet.suffix, fleet.origin, fleet.check = "abc123", "o-abc123", "mk-abc123"
    fleet.clusters = ["w1-abc123", "w2-abc123"]
    fleet.workers = [w1, w2]  # type: ignore[list-item]
    await fleet.queues()
    await fleet.submit("a")
    await fleet.submit("b", gpus=2)
    await fleet.report_capacity(1, 3)
    assert {"m": manager.sent, "w1": w1.sent, "w2": w2.sent} == GOLDEN["harness"]

    # Fleet.start's MultiKueue objects (start itself needs real workers).
    clusters = [
        MultiKueueCluster(c).kubeconfig(f"kubeconfig-{i}").obj()
        for i, c in enumerate(fleet.clusters)
    ]
    config = MultiKueueConfig(fleet.check).clusters(*fleet.clusters).obj()
    check = AdmissionCheck(fleet.check).multikueue(fleet.check).obj()
    assert [*clusters, config, check] == INLINE["harness_start"]

    # test_dispatch.py's own objects on a worker.
    orphan = {"kueue.x-k8s.io/multikueue-origin": fleet.origin}
    prebuilt = {"kueue.x-k8s.io/prebuilt-workload-name": "orphan"}
    template = harness.POD_TEMPLATE
    sent = [
        Workload(name, fleet.ns)
        .labels(labels)
        .queue("lq")
        .pod_set("main", 1, template=template)
        .obj()
        for name, labels in (("orphan", orphan), ("not-ours", {}))
    ]
    for name, labels in (("orphan-job", {**orphan, **prebuilt}), ("user-job", prebuilt)):
        sent.append(Job(name, fleet.ns).labels(labels).suspend().template(template).obj())
    shared = Job("shared", fleet.ns).label("team", "worker").suspend().template(template)
    assert [*sent, shared.obj()] == INLINE["test_dispatch"]


async def test_the_connections_harness_sends_what_it_did() -> None:
    from tests.integration.multikueue import test_connections as connections

    assert [
        connections.workload_body("w", "ns", {"a": "b"}),
        connections.workload_body("w", "ns", {}),
    ] == GOLDEN["workload_body"]
    kube = FakeKube()
    harness = connections.Harness(types.SimpleNamespace(), kube, "ns")  # type: ignore[arg-type]
    await harness.cluster("c1", "kubeconfig-1")
    await harness.cluster("c2", "/path", "Path")
    await harness.config("cfg", ["c1", "c2"])
    await harness.check("chk", "cfg")
    assert kube.sent == GOLDEN["connections"]
    assert WorkerCapacity("report-1").cluster_name("worker-1").obj() == INLINE["worker_capacity"]


def test_the_chart_tests_send_what_they_did() -> None:
    from tests.integration import test_charts as charts

    assert {
        "kueue_objects": charts.kueue_objects("work-ns", "s1"),
        "queued_job": charts.queued_job("train", "work-ns").obj(),
        "dispatched_copies": list(charts.dispatched_copies("work-ns", "team")),
    } == GOLDEN["charts"]


async def test_the_agent_and_visibility_tests_send_what_they_did() -> None:
    from tests.integration import test_agent_capacity as agent
    from tests.integration.hub import test_visibility_apiservice as visibility

    kube = FakeKube()
    world = agent.AgentWorld(kube, "s1")  # type: ignore[arg-type]
    await world.setup()
    await world.setup(gpu_quota=4)
    await world.workload("w", 2)
    kueue = [s for s in kube.sent if s[1] not in ("namespaces", "serviceaccounts")]
    assert kueue == GOLDEN["agent_capacity"]

    kube = FakeKube()
    await visibility._queue_with_pending(kube, "vis-ns")  # type: ignore[arg-type]
    assert kube.sent == GOLDEN["visibility"]


def test_the_cli_scene_sends_what_it_did() -> None:
    from tests.integration.cli.conftest import Scene

    rest = {"manager": FakeRest(), "worker-1": FakeRest()}
    fleet = types.SimpleNamespace(
        manager=types.SimpleNamespace(name="manager"),
        workers=[types.SimpleNamespace(name="worker-1")],
    )
    scene = Scene(fleet, rest, "cli-ns", "hub-ns", "abc123")  # type: ignore[arg-type]
    scene.queues()
    scene.queues(quota="3")
    scene.workload("w1")
    owner = owner_reference("batch/v1", "Job", "t", "u")
    scene.workload(
        "w2", queue="lq2", priority=20, owner=owner, status={"conditions": []}, active=False
    )
    scene.job("train")
    scene.capacity_report("w", "rf", age=timedelta(seconds=0))
    assert {name: r.sent for name, r in rest.items()} == GOLDEN["cli"]
    assert LocalQueue("lq2", "cli-ns").cluster_queue("cq-abc123").obj() == INLINE["cli_lq2"]
    assert owner_reference("batch/v1", "Job", "train", "uid-train") == INLINE["cli_owner"]
    # Scene.worker and test_cli_status: a worker whose kubeconfig Secret is named.
    secret_cluster = MultiKueueCluster("c1").kubeconfig("kubeconfig-1", "Secret").obj()
    assert secret_cluster == GOLDEN["connections"][0][3]


async def test_the_kube_tests_send_what_they_did() -> None:
    from tests.integration.kube import test_informer, test_status_writer

    assert test_informer.local_queue("a", "ns") == GOLDEN["informer_lq"]
    kube = FakeKube()
    await test_status_writer.make_queue(kube, "ns")  # type: ignore[arg-type]
    assert kube.sent == GOLDEN["status_writer"]


# -- e2e helpers ---------------------------------------------------------------------------


def test_the_e2e_helpers_send_what_they_did() -> None:
    from tests.e2e import test_agent, test_multikueue_preemption, test_multikueue_stream
    from tests.e2e.gpu_queue import gpu_queue_manifests
    from tests.e2e.multikueue_fixtures import queued_job

    manifests = gpu_queue_manifests("gpu-s", "gpus-s", "ns", 16)
    assert manifests == [with_api_version(m) for m in GOLDEN["gpu_queue"]]
    assert [
        queued_job("train", "lq", gpus_per_pod=4, pods=2, run_seconds=3),
        queued_job("x", None, gpus_per_pod=0, pods=1, run_seconds=600),
        queued_job("y", "lq", gpus_per_pod=1, pods=3, run_seconds=1.5, node_selector={"a": "b"}),
    ] == GOLDEN["queued_job"]
    assert test_multikueue_stream._short_job(7, "lq") == GOLDEN["short_job"]
    job, workload = test_agent._remote_copies("ns", "train")
    old_job, old_workload = GOLDEN["remote_copies"]
    assert (job, workload) == (old_job, with_api_version(old_workload))
    prioritised = test_multikueue_preemption._prioritised("p", "lq", "high", 5)
    assert prioritised == GOLDEN["prioritised"]

    # Built inline in the tests.
    assert WorkloadPriorityClass("high", 1000).obj() == INLINE["priority_class"]
    bump = kwok_job("bump", gpus_per_pod=0, pods=1, run_seconds=600)
    assert bump.queue("user-queue").priority_class("low").obj() == INLINE["preemption_bump"]
    single = kwok_job("train-0", gpus_per_pod=8, pods=1, run_seconds=4).queue("team")
    assert single.suspend().obj() == INLINE["single_cluster_job"]


def test_the_failure_tests_submit_what_they_did(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.e2e import test_multikueue_failures as failures

    created: list[list[Any]] = []
    batch = types.SimpleNamespace(
        create_namespaced_job=lambda ns, job: created.append([ns, copy.deepcopy(job)])
    )
    monkeypatch.setattr(failures, "_batch", lambda member: batch)
    world = types.SimpleNamespace(running=types.SimpleNamespace(manager=None))
    failures.submit_jobs(world, "a", "b")  # type: ignore[arg-type]
    assert created == GOLDEN["submit_jobs"]


# -- unit helpers --------------------------------------------------------------------------


def test_the_dispatch_unit_builders_make_what_they_did() -> None:
    from tests.unit.hub.multikueue.dispatch import builders as b

    local = b.local_workload()
    assert [
        local,
        b.local_workload(
            check_state="Ready",
            reserved=False,
            conditions=[b.condition("Evicted", reason="Preempted")],
            cluster="w1",
            nominated=["w1", "w2"],
            other_checks={"prov": "Ready"},
            priority=3,
            gpus=2,
            check_at=b.T0 + 5,
        ),
        b.remote_copy(local),
        b.remote_copy(local, admitted_at=b.T0, conditions=[b.condition("X")], uid="u2"),
        b.remote_job(),
        b.pod_sets(gpus=1, cpu="2", count=3),
    ] == GOLDEN["unit_dispatch"]

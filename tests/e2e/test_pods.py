"""Plain Pods and Deployments queued by `fleetq hub` with its webhooks, on worker-1.

The hub runs out of cluster with the `pod`, `deployment` and `statefulset` frameworks and a
`managedJobsNamespaceSelector` that selects only this module's namespaces (the Pod
webhook, fail-closed like upstream's, is registered for those alone); the real scheduler
places the ungated pods on kwok nodes. kwok never ends a pod that no Job owns, so a test
plays the kubelet and writes `status.phase: Succeeded` when a Pod should finish.
- a gated Pod is not scheduled until its Workload is admitted, then lands on the
  flavor's nodes; a second one waits, gated, until the first finishes and frees the quota;
- a Deployment of 3 replicas gets 3 admitted pods within 3 GPUs of quota, a 4th replica
  waits gated, scaling down releases the quota;
- a serving Deployment pod is preempted by a higher-priority Pod: deleted, its
  replacement waits gated and runs once the quota is back;
- a pod group of 4 gets its Workload only once complete and is admitted all at once; a
  second group that does not fit is admitted not at all until the first finishes;
- a failed group member makes the Workload WaitingForReplacementPods (quota kept); its
  replacement runs under the same admission, the failed Pod is released, a Pod beyond
  the total count is deleted;
- a group with `retriable-in-group: "false"` finishes once no member runs, and takes no
  replacement after;
- a fast-admission group is admitted from its first Pod, the others join that admission;
- a preempted group has every Pod stopped (marked, deleted, kept until replaced); the
  same Workload waits for replacement Pods, then is queued again and runs them;
- a StatefulSet of 3 is one group whose Workload (upstream's name) holds 3 GPUs while it
  runs; scaled to zero the Workload is kept on hold and the GPUs freed, scaled back the
  same Workload holds them again; deleting the StatefulSet deletes it;
- last, the hub is killed: Pods in kube-system and in the hub's own namespace are still
  created (the Pod webhook never covers them) while one in a managed namespace is refused.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

import pytest
import yaml
from kubernetes import client

from devfleet.cluster_access import ClusterAccess, RunningFleet
from devfleet.fleet_crds import install_crds
from devfleet.polling import until
from devfleet.ports import allocate_ports
from integrations.framework.workload_names import workload_name_for_owner
from tests.builders import Pod, StatefulSet, WorkloadPriorityClass, kwok_inference
from tests.e2e.gpu_queue import GPU, POOL_LABEL, gpu_queue_manifests

REPO = Path(__file__).resolve().parents[2]
GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"
GATE = "kueue.x-k8s.io/admission"
MANAGED = "kueue.x-k8s.io/managed"
SELECT_LABEL = "fleetq.dev/e2e-pods"
WAITING = "WaitingForReplacementPods"
RETRIABLE = "kueue.x-k8s.io/retriable-in-group"
MUTATING = "fleetq-mutating-webhook-configuration"
VALIDATING = "fleetq-validating-webhook-configuration"
LWS_FRAMEWORK = "leaderworkerset.x-k8s.io/leaderworkerset"
"""Also enabled: tests/e2e/test_leaderworkerset.py shares this hub fixture."""
Json = dict[str, Any]


class PodsHub:
    """The hub process and what the tests need to know about it."""

    def __init__(self, worker: ClusterAccess, workdir: Path) -> None:
        self.worker = worker
        self.run_id = uuid.uuid4().hex[:8]
        self.namespace = f"fleetq-pods-{self.run_id}"
        self.log = workdir / "hub.log"
        config = workdir / "config.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "config.kueue.x-k8s.io/v1beta2",
                    "kind": "Configuration",
                    "namespace": self.namespace,
                    "leaderElection": {"leaderElect": False},
                    "clientConnection": {"qps": 50, "burst": 100},
                    "webhook": {"certDir": str(workdir / "certs")},
                    "managedJobsNamespaceSelector": {"matchLabels": {SELECT_LABEL: self.run_id}},
                    "integrations": {
                        "frameworks": ["batch/job", "deployment", "statefulset", LWS_FRAMEWORK]
                    },
                }
            )
        )
        self.health, metrics, webhook = allocate_ports(3)
        with self.log.open("w") as out:
            self.process = subprocess.Popen(
                [
                    *(sys.executable, "-m", "cli.main", "hub"),
                    *("--config", str(config), "--kubeconfig", str(worker.kubeconfig)),
                    *("--health-port", str(self.health), "--metrics-port", str(metrics)),
                    *("--webhook-url-host", "127.0.0.1", "--webhook-port", str(webhook)),
                ],
                cwd=REPO,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )

    def ready(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"the hub exited:\n{self.log.read_text()[-4000:]}")
        with (
            contextlib.suppress(OSError),
            urllib.request.urlopen(f"http://127.0.0.1:{self.health}/readyz", timeout=2) as r,
        ):
            return r.status == 200
        return False

    def kill(self) -> None:
        """Gone without a clean stop: its fail-closed webhook configurations stay."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    @property
    def down(self) -> bool:
        return self.process.poll() is not None

    def remove_configurations(self) -> None:
        """What a clean stop does; after a kill the test must (fail-closed webhooks)."""
        with self.worker.api_client() as api_client:
            admission = client.AdmissionregistrationV1Api(api_client)
            with contextlib.suppress(client.ApiException):
                admission.delete_mutating_webhook_configuration(MUTATING)
            with contextlib.suppress(client.ApiException):
                admission.delete_validating_webhook_configuration(VALIDATING)

    def stop(self) -> None:
        if not self.down:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.remove_configurations()
        with self.worker.api_client() as api_client, contextlib.suppress(client.ApiException):
            client.CoreV1Api(api_client).delete_namespace(self.namespace)


@pytest.fixture(scope="module")
def pods_hub(
    full_fleet: RunningFleet, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PodsHub]:
    worker = full_fleet.cluster("worker-1")
    install_crds(worker)
    hub = PodsHub(worker, tmp_path_factory.mktemp("pods-hub"))
    try:
        until(hub.ready, "the hub ready (webhooks registered)", 60)
        yield hub
    finally:
        hub.stop()


QueueFactory = Callable[..., str]


@pytest.fixture
def pod_queue(pods_hub: PodsHub, namespace_factory: Callable[..., str]) -> Iterator[QueueFactory]:
    """`make(gpus, preemption=False)`: a managed namespace with LocalQueue `team` on a
    ClusterQueue of `gpus` GPUs. Pods left in it are deleted while the hub still runs."""
    worker = pods_hub.worker
    made: list[tuple[str, str, str]] = []

    def make(gpus: int, *, preemption: bool = False) -> str:
        namespace = namespace_factory(
            "pods", clusters=(worker,), labels={SELECT_LABEL: pods_hub.run_id}
        )
        suffix = namespace.rpartition("-")[2]
        flavor, cq = f"gpu-{suffix}", f"gpus-{suffix}"
        objects = gpu_queue_manifests(flavor, cq, namespace, gpus=gpus)
        if preemption:
            objects[1]["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority"}
        with worker.api_client() as api_client:
            custom = client.CustomObjectsApi(api_client)
            for body in objects:
                plural = body["kind"].lower() + "s"
                if body["kind"] == "LocalQueue":
                    custom.create_namespaced_custom_object(GROUP, VERSION, namespace, plural, body)
                else:
                    custom.create_cluster_custom_object(GROUP, VERSION, plural, body)
        made.append((namespace, flavor, cq))
        return namespace

    yield make
    if pods_hub.down:
        pods_hub.remove_configurations()
    with worker.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        apps = client.AppsV1Api(api_client)
        custom = client.CustomObjectsApi(api_client)
        for namespace, flavor, cq in made:
            with contextlib.suppress(client.ApiException):
                apps.delete_collection_namespaced_deployment(namespace)
            with contextlib.suppress(client.ApiException):
                apps.delete_collection_namespaced_stateful_set(namespace)
            with contextlib.suppress(client.ApiException):
                core.delete_collection_namespaced_pod(namespace)
            if pods_hub.down:  # nothing else drops the finalizers now
                for pod in core.list_namespaced_pod(namespace).items:
                    with contextlib.suppress(client.ApiException):
                        core.patch_namespaced_pod(pod.metadata.name, namespace, NO_FINALIZERS)
            for plural, name in (("clusterqueues", cq), ("resourceflavors", flavor)):
                with contextlib.suppress(client.ApiException):
                    custom.delete_cluster_custom_object(GROUP, VERSION, plural, name)
                if pods_hub.down:
                    with contextlib.suppress(client.ApiException):
                        custom.patch_cluster_custom_object(
                            GROUP, VERSION, plural, name, NO_FINALIZERS
                        )


NO_FINALIZERS: Final = {"metadata": {"finalizers": None}}


# -- reading -------------------------------------------------------------------------------
def _pod(core: Any, namespace: str, name: str) -> Any:
    try:
        return core.read_namespaced_pod(name, namespace)
    except client.ApiException as error:
        if error.status == 404:
            return None
        raise


def _gated(pod: Any) -> bool:
    return any(g.name == GATE for g in pod.spec.scheduling_gates or ())


def _workload_of(custom: Any, namespace: str, pod_name: str) -> Json | None:
    listed = custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "workloads")
    for workload in listed["items"]:
        owners = workload["metadata"].get("ownerReferences") or ()
        if any(o["kind"] == "Pod" and o["name"] == pod_name for o in owners):
            return dict(workload)
    return None


def _condition(obj: Json | None, kind: str) -> Json | None:
    for condition in ((obj or {}).get("status") or {}).get("conditions") or ():
        if condition["type"] == kind and condition["status"] == "True":
            return dict(condition)
    return None


def _gpus_in_use(custom: Any, namespace: str) -> int:
    cq = f"gpus-{namespace.rpartition('-')[2]}"
    status = custom.get_cluster_custom_object(GROUP, VERSION, "clusterqueues", cq).get("status")
    total = 0
    for flavor in (status or {}).get("flavorsUsage") or ():
        for resource in flavor.get("resources") or ():
            if resource["name"] == GPU:
                total += int(resource.get("total", 0))
    return total


def _finish(core: Any, namespace: str, name: str) -> None:
    """Play the kubelet: the Pod's containers exited 0 (kwok leaves non-Job pods running)."""
    core.patch_namespaced_pod_status(name, namespace, {"status": {"phase": "Succeeded"}})


def _app_pods(core: Any, namespace: str, app: str) -> list[Any]:
    pods = core.list_namespaced_pod(namespace, label_selector=f"app={app}").items
    return [p for p in pods if p.metadata.deletion_timestamp is None]


def _scheduled(core: Any, namespace: str, name: str) -> Any:
    """The Pod once it is bound to a node (None before)."""
    pod = _pod(core, namespace, name)
    return pod if pod is not None and pod.spec.node_name else None


def _running_replicas(core: Any, namespace: str, app: str, count: int) -> list[Any] | None:
    """Exactly `count` live, ungated, scheduled pods of the Deployment `app` (else None)."""
    placed = [p for p in _app_pods(core, namespace, app) if p.spec.node_name and not _gated(p)]
    return placed if len(placed) == count else None


# -- tests ---------------------------------------------------------------------------------
def test_a_gated_pod_runs_only_once_admitted_and_lands_on_the_flavors_nodes(
    pods_hub: PodsHub, pod_queue: QueueFactory
) -> None:
    namespace = pod_queue(8)
    with pods_hub.worker.api_client() as api_client:
        core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)

        def submit(name: str) -> None:
            pod = Pod(name).queue("team").requests({"cpu": "1", "memory": "1Gi"}).limit(GPU, "8")
            created = core.create_namespaced_pod(namespace, pod.obj())
            assert _gated(created), "the webhook gates a queued Pod at creation"
            assert MANAGED in (created.metadata.finalizers or [])
            assert created.metadata.labels[MANAGED] == "true"

        submit("first")
        first = until(
            lambda: _scheduled(core, namespace, "first"),
            "the first Pod admitted, ungated and scheduled",
            60,
        )
        assert not _gated(first)
        assert first.spec.node_selector == {POOL_LABEL: "gpu"}
        assert first.spec.node_name.startswith("worker-1-gpu-")
        workload = _workload_of(custom, namespace, "first") or {}
        assert _condition(workload, "Admitted") is not None
        assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == [("main", 1)]

        submit("second")
        until(lambda: _workload_of(custom, namespace, "second"), "the second Pod's Workload", 30)
        time.sleep(2)  # the second Pod has had every chance to be admitted by now
        second = _pod(core, namespace, "second")
        assert _gated(second) and not second.spec.node_name, "no quota left: it waits gated"
        assert _condition(_workload_of(custom, namespace, "second"), "QuotaReserved") is None

        _finish(core, namespace, "first")
        finished = until(
            lambda: _condition(_workload_of(custom, namespace, "first"), "Finished"),
            "the first Pod's Workload Finished",
            30,
        )
        assert finished["reason"] == "Succeeded"
        until(
            lambda: not (_pod(core, namespace, "first").metadata.finalizers or []) or None,
            "the first Pod's finalizer released",
            30,
        )
        second = until(
            lambda: _scheduled(core, namespace, "second"),
            "the second Pod admitted and scheduled once the quota is free",
            60,
        )
        assert second.spec.node_selector == {POOL_LABEL: "gpu"}


def test_a_deployment_gets_replicas_within_quota_and_the_one_beyond_waits(
    pods_hub: PodsHub, pod_queue: QueueFactory
) -> None:
    namespace = pod_queue(3)
    with pods_hub.worker.api_client() as api_client:
        core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)
        apps = client.AppsV1Api(api_client)
        deployment = kwok_inference("infer", replicas=3).queue("team")
        apps.create_namespaced_deployment(namespace, deployment.obj())

        placed = until(
            lambda: _running_replicas(core, namespace, "infer", 3),
            "3 replicas admitted and scheduled",
            90,
        )
        assert all(p.spec.node_selector == {POOL_LABEL: "gpu"} for p in placed)
        assert all(
            _condition(_workload_of(custom, namespace, p.metadata.name), "Admitted") for p in placed
        )
        until(lambda: _gpus_in_use(custom, namespace) == 3 or None, "3 GPUs in use", 30)

        apps.patch_namespaced_deployment_scale("infer", namespace, {"spec": {"replicas": 4}})
        waiting = until(
            lambda: [p for p in _app_pods(core, namespace, "infer") if _gated(p)] or None,
            "the 4th replica created gated",
            30,
        )
        time.sleep(2)
        assert len(_app_pods(core, namespace, "infer")) == 4
        assert not _pod(core, namespace, waiting[0].metadata.name).spec.node_name
        assert _gpus_in_use(custom, namespace) == 3, "the 4th replica holds no quota"

        apps.patch_namespaced_deployment_scale("infer", namespace, {"spec": {"replicas": 2}})
        until(lambda: _gpus_in_use(custom, namespace) == 2 or None, "scaled to 2: 2 GPUs", 60)
        remaining = _app_pods(core, namespace, "infer")
        assert len(remaining) == 2 and not any(_gated(p) for p in remaining)


def test_a_serving_pod_is_preempted_by_a_higher_priority_pod_and_its_replacement_waits(
    pods_hub: PodsHub, pod_queue: QueueFactory
) -> None:
    namespace = pod_queue(2, preemption=True)
    suffix = namespace.rpartition("-")[2]
    low, high = f"serve-{suffix}", f"urgent-{suffix}"
    with pods_hub.worker.api_client() as api_client:
        core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)
        apps = client.AppsV1Api(api_client)
        for name, value in ((low, 10), (high, 1000)):
            body = WorkloadPriorityClass(name, value).obj()
            custom.create_cluster_custom_object(GROUP, VERSION, "workloadpriorityclasses", body)
        try:
            serving = kwok_inference("serve", replicas=2).queue("team").priority_class(low)
            apps.create_namespaced_deployment(namespace, serving.obj())
            before = until(
                lambda: _running_replicas(core, namespace, "serve", 2),
                "both serving replicas running",
                90,
            )
            urgent = Pod("urgent").queue("team").label("kueue.x-k8s.io/priority-class", high)
            core.create_namespaced_pod(
                namespace, urgent.requests({"cpu": "1", "memory": "1Gi"}).limit(GPU, "1").obj()
            )
            until(
                lambda: _scheduled(core, namespace, "urgent"),
                "the urgent Pod admitted by preempting a serving replica",
                60,
            )
            names_before = {p.metadata.name for p in before}
            pods_now = _app_pods(core, namespace, "serve")
            survivors = {p.metadata.name for p in pods_now} & names_before
            assert len(survivors) == 1, "exactly one serving replica was preempted (deleted)"
            replacement = [p for p in pods_now if p.metadata.name not in names_before]
            assert len(replacement) == 1 and _gated(replacement[0]), "its replacement waits"

            _finish(core, namespace, "urgent")
            until(
                lambda: _scheduled(core, namespace, replacement[0].metadata.name),
                "the replacement replica admitted once the urgent Pod is done",
                60,
            )
        finally:
            for name in (low, high):
                with contextlib.suppress(client.ApiException):
                    custom.delete_cluster_custom_object(
                        GROUP, VERSION, "workloadpriorityclasses", name
                    )


def _group_pod(name: str, group: str) -> Json:
    pod = Pod(name).queue("team").group(group, 4).requests({"cpu": "1", "memory": "1Gi"})
    return pod.limit(GPU, "1").obj()


def _group_workload(custom: Any, namespace: str, name: str) -> Json | None:
    """A group's Workload: named after the group."""
    try:
        found: Json = custom.get_namespaced_custom_object(
            GROUP, VERSION, namespace, "workloads", name
        )
    except client.ApiException as error:
        if error.status == 404:
            return None
        raise
    return found


def test_a_pod_group_of_4_is_admitted_all_at_once_or_not_at_all(
    pods_hub: PodsHub, pod_queue: QueueFactory
) -> None:
    namespace = pod_queue(4)
    with pods_hub.worker.api_client() as api_client:
        core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)
        for index in range(3):
            core.create_namespaced_pod(namespace, _group_pod(f"a-{index}", "group-a"))
        time.sleep(2)
        assert _group_workload(custom, namespace, "group-a") is None, "3 of 4: no Workload yet"
        core.create_namespaced_pod(namespace, _group_pod("a-3", "group-a"))
        workload = until(
            lambda: _group_workload(custom, namespace, "group-a"), "the group's Workload", 30
        )
        assert [p["count"] for p in workload["spec"]["podSets"]] == [4]
        names_a = [f"a-{i}" for i in range(4)]
        until(
            lambda: all(_scheduled(core, namespace, n) for n in names_a) or None,
            "all four Pods of the group ungated and scheduled",
            60,
        )

        # Quota is full: a second complete group is queued whole, none of its Pods starts.
        names_b = [f"b-{i}" for i in range(4)]
        for name in names_b:
            core.create_namespaced_pod(namespace, _group_pod(name, "group-b"))
        until(lambda: _group_workload(custom, namespace, "group-b"), "group-b's Workload", 30)
        time.sleep(2)
        pods_b = [_pod(core, namespace, n) for n in names_b]
        assert all(_gated(p) and not p.spec.node_name for p in pods_b), "not at all"
        assert _condition(_group_workload(custom, namespace, "group-b"), "QuotaReserved") is None

        for name in names_a:
            _finish(core, namespace, name)
        done = until(
            lambda: _condition(_group_workload(custom, namespace, "group-a"), "Finished"),
            "group-a Finished once its 4 Pods succeeded",
            30,
        )
        assert done["message"] == "Pods succeeded: 4/4."
        until(
            lambda: all(_scheduled(core, namespace, n) for n in names_b) or None,
            "all four Pods of group-b admitted together once the quota is free",
            60,
        )
        until(lambda: _all_running(core, namespace, names_b), "group-b running", 60)
        for name in names_b:  # a group's Pods keep their finalizer until it finishes
            _finish(core, namespace, name)
        until(
            lambda: _condition(_group_workload(custom, namespace, "group-b"), "Finished"),
            "group-b Finished",
            30,
        )


def _all_running(core: Any, namespace: str, names: list[str]) -> bool | None:
    """Every named Pod Running: kwok has played its start (a status written before that
    would be overwritten by kwok's pod-create stage)."""
    pods = [_pod(core, namespace, n) for n in names]
    return all(p is not None and p.status.phase == "Running" for p in pods) or None


def _fail(core: Any, namespace: str, name: str) -> None:
    """Play the kubelet: the Pod's containers exited non-zero."""
    core.patch_namespaced_pod_status(name, namespace, {"status": {"phase": "Failed"}})


def _any_condition(obj: Json | None, kind: str) -> Json | None:
    """The condition of `kind` whatever its status."""
    for condition in ((obj or {}).get("status") or {}).get("conditions") or ():
        if condition["type"] == kind:
            return dict(condition)
    return None


def test_a_failed_group_member_is_replaced_and_its_replacement_runs_under_the_same_admission(
    pods_hub: PodsHub, pod_queue: QueueFactory
) -> None:
    namespace = pod_queue(4)
    names = [f"r-{i}" for i in range(4)]
    with pods_hub.worker.api_client() as api_client:
        core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)
        for name in names:
            core.create_namespaced_pod(namespace, _group_pod(name, "group-r"))
        until(lambda: _all_running(core, namespace, names), "the group admitted and running", 60)
        admitted = _condition(_group_workload(custom, namespace, "group-r"), "Admitted") or {}
        uid = (_group_workload(custom, namespace, "group-r") or {})["metadata"]["uid"]

        _fail(core, namespace, "r-1")
        waiting = until(
            lambda: _condition(_group_workload(custom, namespace, "group-r"), WAITING),
            "WaitingForReplacementPods once a member failed",
            30,
        )
        assert waiting["reason"] == "PodsFailed"
        until(
            lambda: _gpus_in_use(custom, namespace) == 4 or None,
            "the admitted group keeping its quota",
            30,
        )
        assert _condition(_group_workload(custom, namespace, "group-r"), "Admitted")
        assert MANAGED in (_pod(core, namespace, "r-1").metadata.finalizers or []), (
            "the failed Pod keeps its finalizer until a replacement comes"
        )

        core.create_namespaced_pod(namespace, _group_pod("r-1-again", "group-r"))
        replacement = until(
            lambda: _scheduled(core, namespace, "r-1-again"),
            "the replacement ungated and scheduled",
            60,
        )
        assert replacement.spec.node_selector == {POOL_LABEL: "gpu"}
        until(lambda: _all_running(core, namespace, ["r-1-again"]), "the replacement running", 60)
        workload = until(
            lambda: (
                (w := _group_workload(custom, namespace, "group-r"))
                and (_any_condition(w, WAITING) or {}).get("status") == "False"
                and w
            ),
            "WaitingForReplacementPods False again",
            30,
        )
        assert workload["metadata"]["uid"] == uid, "the same Workload"
        again = _condition(workload, "Admitted") or {}
        assert again.get("lastTransitionTime") == admitted["lastTransitionTime"], (
            "admitted all along: the replacement joined the same admission"
        )
        owners = {o["name"] for o in workload["metadata"]["ownerReferences"]}
        assert "r-1-again" in owners
        until(
            lambda: not (_pod(core, namespace, "r-1").metadata.finalizers or []) or None,
            "the replaced Pod's finalizer released",
            30,
        )

        core.create_namespaced_pod(namespace, _group_pod("r-extra", "group-r"))
        until(
            lambda: _pod(core, namespace, "r-extra") is None or None,
            "a Pod beyond the total count deleted",
            30,
        )
        for name in ("r-0", "r-1-again", "r-2", "r-3"):
            _finish(core, namespace, name)
        done = until(
            lambda: _condition(_group_workload(custom, namespace, "group-r"), "Finished"),
            "the group Finished",
            30,
        )
        assert done["message"] == "Pods succeeded: 4/4."


def test_an_unretriable_group_finishes_once_its_pods_end_and_takes_no_replacement(
    pods_hub: PodsHub, pod_queue: QueueFactory
) -> None:
    namespace = pod_queue(2)
    with pods_hub.worker.api_client() as api_client:
        core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)
        for name in ("u-0", "u-1"):
            body = _group_pod(name, "group-u")
            body["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"] = "2"
            if name == "u-0":
                body["metadata"]["annotations"][RETRIABLE] = "false"
            core.create_namespaced_pod(namespace, body)
        until(lambda: _all_running(core, namespace, ["u-0", "u-1"]), "the group running", 60)
        _fail(core, namespace, "u-0")
        time.sleep(2)
        assert _condition(_group_workload(custom, namespace, "group-u"), "Finished") is None, (
            "not finished while a member still runs"
        )
        _finish(core, namespace, "u-1")
        done = until(
            lambda: _condition(_group_workload(custom, namespace, "group-u"), "Finished"),
            "the unretriable group Finished once no member runs",
            30,
        )
        assert done["reason"] == "Succeeded" and done["message"] == "Pods succeeded: 1/2."
        until(lambda: _gpus_in_use(custom, namespace) == 0 or None, "its quota released", 30)
        until(
            lambda: not (_pod(core, namespace, "u-0").metadata.finalizers or []) or None,
            "the failed Pod released",
            30,
        )
        late = _group_pod("u-0-again", "group-u")
        late["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"] = "2"
        core.create_namespaced_pod(namespace, late)
        time.sleep(3)
        pod = _pod(core, namespace, "u-0-again")
        assert _gated(pod) and not pod.spec.node_name, "a finished group takes no replacement"


def test_a_fast_admission_group_is_admitted_from_its_first_pod_and_the_rest_join_it(
    pods_hub: PodsHub, pod_queue: QueueFactory
) -> None:
    namespace = pod_queue(3)
    names = [f"f-{i}" for i in range(3)]
    with pods_hub.worker.api_client() as api_client:
        core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)

        def submit(name: str) -> None:
            body = _group_pod(name, "group-f")
            body["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"] = "3"
            body["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-fast-admission"] = "true"
            core.create_namespaced_pod(namespace, body)

        submit(names[0])
        until(lambda: _scheduled(core, namespace, names[0]), "the first Pod admitted alone", 60)
        workload = _group_workload(custom, namespace, "group-f") or {}
        assert [p["count"] for p in workload["spec"]["podSets"]] == [3], "sized for the group"
        until(lambda: _gpus_in_use(custom, namespace) == 3 or None, "3 GPUs held for it", 30)
        for name in names[1:]:
            submit(name)
        until(
            lambda: all(_scheduled(core, namespace, n) for n in names) or None,
            "the later Pods ungated into the same admission",
            60,
        )
        again = _group_workload(custom, namespace, "group-f") or {}
        assert again["metadata"]["uid"] == workload["metadata"]["uid"]
        until(lambda: _all_running(core, namespace, names), "the group running", 60)
        for name in names:
            _finish(core, namespace, name)
        until(
            lambda: _condition(_group_workload(custom, namespace, "group-f"), "Finished"),
            "the fast-admission group Finished",
            30,
        )


def test_a_preempted_group_is_stopped_entirely_and_requeued_with_replacement_pods(
    pods_hub: PodsHub, pod_queue: QueueFactory
) -> None:
    namespace = pod_queue(4, preemption=True)
    suffix = namespace.rpartition("-")[2]
    low, high = f"batch-{suffix}", f"urgent-{suffix}"
    names = [f"p-{i}" for i in range(4)]
    replacements = [f"p-{i}-again" for i in range(4)]
    with pods_hub.worker.api_client() as api_client:
        core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)
        for name, value in ((low, 10), (high, 1000)):
            body = WorkloadPriorityClass(name, value).obj()
            custom.create_cluster_custom_object(GROUP, VERSION, "workloadpriorityclasses", body)

        def submit(pod_names: list[str]) -> None:
            for name in pod_names:
                body = _group_pod(name, "group-p")
                body["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = low
                core.create_namespaced_pod(namespace, body)

        try:
            submit(names)
            until(
                lambda: _all_running(core, namespace, names), "the low-priority group running", 60
            )
            uid = (_group_workload(custom, namespace, "group-p") or {})["metadata"]["uid"]
            urgent = Pod("urgent").queue("team").label("kueue.x-k8s.io/priority-class", high)
            core.create_namespaced_pod(
                namespace, urgent.requests({"cpu": "1", "memory": "1Gi"}).limit(GPU, "1").obj()
            )

            def all_deleting() -> list[Any] | None:
                pods = [_pod(core, namespace, n) for n in names]
                deleting = all(p is not None and p.metadata.deletion_timestamp for p in pods)
                return pods if deleting else None

            stopped = until(all_deleting, "every Pod of the preempted group stopped (deleted)", 60)
            for pod in stopped:
                reasons = [c.type for c in pod.status.conditions or ()]
                assert "TerminationTarget" in reasons, "marked with why it goes"
                assert MANAGED in (pod.metadata.finalizers or []), "kept until replaced"
                _fail(core, namespace, pod.metadata.name)  # play the kubelet stopping it
            until(
                lambda: _scheduled(core, namespace, "urgent"),
                "the urgent Pod admitted in the freed quota",
                60,
            )
            waiting = until(
                lambda: _condition(_group_workload(custom, namespace, "group-p"), WAITING),
                "the preempted Workload waiting for replacement Pods",
                30,
            )
            assert waiting["reason"] == "Preempted"
            workload = _group_workload(custom, namespace, "group-p") or {}
            assert _condition(workload, "QuotaReserved") is None, "its quota released"
            assert workload["metadata"]["uid"] == uid, "the same Workload, kept"

            submit(replacements)
            until(
                lambda: all(_pod(core, namespace, n) is None for n in names) or None,
                "the replaced Pods released and gone",
                60,
            )
            time.sleep(2)
            assert all(_gated(_pod(core, namespace, n)) for n in replacements), (
                "3 GPUs free, 4 wanted: the replacements wait whole"
            )
            until(lambda: _all_running(core, namespace, ["urgent"]), "the urgent Pod running", 60)
            _finish(core, namespace, "urgent")
            until(
                lambda: all(_scheduled(core, namespace, n) for n in replacements) or None,
                "the group requeued and admitted again with its replacements",
                60,
            )
            until(lambda: _all_running(core, namespace, replacements), "replacements running", 60)
            again = _group_workload(custom, namespace, "group-p") or {}
            assert again["metadata"]["uid"] == uid, "the same Workload requeued"
            for name in replacements:
                _finish(core, namespace, name)
            until(
                lambda: _condition(_group_workload(custom, namespace, "group-p"), "Finished"),
                "the requeued group Finished",
                30,
            )
        finally:
            for name in (low, high):
                with contextlib.suppress(client.ApiException):
                    custom.delete_cluster_custom_object(
                        GROUP, VERSION, "workloadpriorityclasses", name
                    )


def _statefulset_workload_name(sts: Any) -> str:
    """Upstream's name for a StatefulSet's Workload (`statefulset-<name>-<hash of its UID>`)."""
    return workload_name_for_owner(
        owner_name=sts.metadata.name,
        owner_uid=sts.metadata.uid,
        owner_kind="StatefulSet",
        owner_group="apps",
    )


def _on_hold(workload: Json | None) -> bool:
    for condition in ((workload or {}).get("status") or {}).get("conditions") or ():
        if condition["type"] == "QuotaReserved":
            return bool(condition["status"] == "False" and condition["reason"] == "OnHold")
    return False


def test_a_statefulset_holds_quota_as_one_group_while_it_runs_and_frees_it_when_gone(
    pods_hub: PodsHub, pod_queue: QueueFactory
) -> None:
    namespace = pod_queue(4)
    with pods_hub.worker.api_client() as api_client:
        core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)
        apps = client.AppsV1Api(api_client)
        sts = StatefulSet("web", replicas=3).queue("team").requests({"cpu": "1", "memory": "1Gi"})
        created = apps.create_namespaced_stateful_set(namespace, sts.limit(GPU, "1").obj())
        name = _statefulset_workload_name(created)
        until(
            lambda: _running_replicas(core, namespace, "web", 3),
            "3 StatefulSet replicas admitted as one group and scheduled",
            90,
        )
        workload = _group_workload(custom, namespace, name) or {}
        assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == [("main", 3)]
        assert workload["metadata"]["labels"]["kueue.x-k8s.io/job-uid"] == created.metadata.uid
        uid = workload["metadata"]["uid"]
        until(lambda: _gpus_in_use(custom, namespace) == 3 or None, "3 GPUs held", 30)
        time.sleep(2)
        assert _condition(_group_workload(custom, namespace, name), "Finished") is None

        apps.patch_namespaced_stateful_set_scale("web", namespace, {"spec": {"replicas": 0}})
        until(lambda: _gpus_in_use(custom, namespace) == 0 or None, "scaled to 0: freed", 60)
        held = until(
            lambda: (w := _group_workload(custom, namespace, name)) and _on_hold(w) and w,
            "the group's Workload kept, on hold",
            30,
        )
        assert held["metadata"]["uid"] == uid
        until(
            lambda: (
                apps.read_namespaced_stateful_set("web", namespace).status.replicas == 0 or None
            ),
            "the scale-down over",
            60,
        )
        apps.patch_namespaced_stateful_set_scale("web", namespace, {"spec": {"replicas": 3}})
        until(lambda: _running_replicas(core, namespace, "web", 3), "scaled back: running", 90)
        until(lambda: _gpus_in_use(custom, namespace) == 3 or None, "3 GPUs held again", 30)
        again = _group_workload(custom, namespace, name) or {}
        assert again["metadata"]["uid"] == uid and not _on_hold(again), "the same Workload"
        apps.delete_namespaced_stateful_set("web", namespace)
        until(lambda: _gpus_in_use(custom, namespace) == 0 or None, "deleted: freed", 60)
        until(
            lambda: _group_workload(custom, namespace, name) is None or None,
            "the Workload deleted with its StatefulSet",
            60,
        )


def test_with_the_hub_down_system_pods_are_still_created(
    pods_hub: PodsHub, pod_queue: QueueFactory
) -> None:
    """Last in this file: it kills the hub (the configurations stay, fail-closed)."""
    namespace = pod_queue(1)
    pods_hub.kill()
    with pods_hub.worker.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        admission = client.AdmissionregistrationV1Api(api_client)
        mutating = admission.read_mutating_webhook_configuration(MUTATING)
        pod_hook = next(w for w in mutating.webhooks if w.name == "mpod.fleetq.dev")
        assert pod_hook.failure_policy == "Fail"

        name = f"system-{pods_hub.run_id}"
        for system_namespace in ("kube-system", pods_hub.namespace):
            body = Pod(name).queue("team").obj()
            created = core.create_namespaced_pod(system_namespace, body)
            assert not created.spec.scheduling_gates, "no webhook touched it"
            core.delete_namespaced_pod(name, system_namespace, grace_period_seconds=0)

        with pytest.raises(client.ApiException) as refused:
            core.create_namespaced_pod(namespace, Pod(name).queue("team").obj())
        assert "mpod.fleetq.dev" in str(refused.value.body), "a managed namespace waits on it"

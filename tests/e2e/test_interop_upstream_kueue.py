"""Interop with upstream Kueue, both ways, on a small fleet of this module's own.

Every test runs against each upstream version fleetq is tested with
(devfleet.toolchain.KUEUE_VERSIONS): v0.19.2, the yardstick, and v0.17.0, the previous one.

The fleet: an API-only manager and two full workers (scheduler, controller-manager, one
kwok CPU node each), so pods really run on the workers and nothing runs on the manager.
(a) The fleetq hub is the manager and `upstream-worker` runs upstream's `kueue` binary
    instead of the fleetq agent: the hub's remote Workload and Job must be admitted and
    run by upstream, and the completion must come back to the manager.
(b) Upstream Kueue is the manager (MultiKueue AdmissionCheck, config, cluster and its
    kubeconfig Secret) and `agent-worker` runs the fleetq agent: upstream's remote copies
    must be admitted by the agent, run, and upstream's manager must see them Finished.
Both run for a Job and for a JobSet (a driver and two workers, with the real JobSet
controller on every cluster): upstream's jobset integration adopts fleetq's copy in (a),
fleetq's agent adopts upstream's in (b).
No Kueue admission webhooks run anywhere, so the manager's job is created suspended and
with `spec.managedBy: kueue.x-k8s.io/multikueue`, as the webhook would have made it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from kubernetes import client, watch

# `bench/` holds scripts, not an installed package: make the repository root importable
# (as tests/unit/bench/conftest.py does) for the shared MultiKueue set-up code.
if str(Path(__file__).resolve().parents[2]) not in sys.path:
    sys.path.append(str(Path(__file__).resolve().parents[2]))

from bench.multikueue.fleetq_processes import start_agent, start_hub, wait_ready
from bench.multikueue.queue_setup import (
    ORIGIN_LABEL,
    QueueSetup,
    apply_manifests,
    remove_cluster_scoped,
)
from devfleet.cluster_access import ClusterAccess, RunningFleet
from devfleet.fleet import Fleet, fleet_home
from devfleet.fleet_spec import ClusterSpec, FleetSpec, NodeGroup
from devfleet.kwok_stages import RUN_DURATION_ANNOTATION
from devfleet.polling import until
from devfleet.toolchain import KUEUE_VERSIONS, kueue_tool, missing_binaries
from devfleet.upstream_kueue import UpstreamKueue, UpstreamKueueOptions, install_crd_files

T = TypeVar("T")
REPO = Path(__file__).resolve().parents[2]
HUB_CRDS = REPO / "charts" / "fleetq-hub" / "crds"
WORKER_CRDS = REPO / "charts" / "fleetq-worker" / "crds"
KUEUE = ("kueue.x-k8s.io", "v1beta2")
UPSTREAM_WORKER = "upstream-worker"
AGENT_WORKER = "agent-worker"
FLEET_PREFIX = "interop-"


def _cpu_cluster(name: str) -> ClusterSpec:
    capacity = {"cpu": "16", "memory": "64Gi", "pods": "110"}
    return ClusterSpec(name, (NodeGroup("cpu", 1, capacity, {"fleetq.dev/node-pool": "cpu"}),))


SPEC = FleetSpec(
    _cpu_cluster("manager"), (_cpu_cluster(UPSTREAM_WORKER), _cpu_cluster(AGENT_WORKER))
)


def _until(probe: Callable[[], T | None], what: str, timeout: float = 90.0) -> T:
    """devfleet's poll with this file's longer default (upstream Kueue's passes are slower)."""
    return until(probe, what, timeout)


def _remove_fleets_of_dead_sessions() -> None:
    for directory in (fleet_home() / "fleets").glob(f"{FLEET_PREFIX}*"):
        pid = directory.name.removeprefix(FLEET_PREFIX)
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            Fleet(directory.name).down(progress=lambda _: None)


@pytest.fixture(scope="module")
def interop_fleet() -> Iterator[RunningFleet]:
    kueue_tools = [kueue_tool(version).name for version in KUEUE_VERSIONS]
    missing = missing_binaries(
        ["kubernetes", "etcd", "kwok", *kueue_tools, "jobset", "training-operator"]
    )
    if missing:
        message = "tools not built (" + ", ".join(missing) + "); run `make fleet-tools`"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    _remove_fleets_of_dead_sessions()
    fleet = Fleet(f"{FLEET_PREFIX}{os.getpid()}")
    try:
        yield fleet.up(SPEC, lite=False, progress=print, api_only=frozenset({"manager"}))
    finally:
        fleet.down(progress=print)


class Cluster:
    """The few reads and writes the tests make on one cluster."""

    def __init__(self, member: ClusterAccess, namespace: str) -> None:
        self.member = member
        self.namespace = namespace
        self._api = member.api_client()
        self.custom = client.CustomObjectsApi(self._api)
        self.batch = client.BatchV1Api(self._api)

    def close(self) -> None:
        self._api.close()

    def workloads(self) -> list[dict[str, Any]]:
        listed = self.custom.list_namespaced_custom_object(*KUEUE, self.namespace, "workloads")
        return list(listed["items"])

    def job(self, name: str) -> Any | None:
        try:
            return self.batch.read_namespaced_job(name, self.namespace)
        except client.ApiException as error:
            if error.status == 404:
                return None
            raise

    def watch_completed_job(self, name: str) -> JobCompletionWatch:
        """Start recording Job `name` reaching Complete (before it exists)."""
        return JobCompletionWatch(self.batch, self.namespace, name)

    def delete_namespace(self) -> None:
        with contextlib.suppress(client.ApiException):
            client.CoreV1Api(self._api).delete_namespace(self.namespace)


class JobCompletionWatch:
    """Watches one namespace's Jobs in a thread and keeps the first `name` seen Complete.

    A finished remote copy is removed by its manager within milliseconds, so polling can
    miss the moment it was Complete on the worker; a watch sees every change.
    """

    def __init__(self, batch: Any, namespace: str, name: str) -> None:
        self.completed: Any | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(batch, namespace, name), daemon=True
        )
        self._thread.start()

    def _run(self, batch: Any, namespace: str, name: str) -> None:
        while not self._stop.is_set() and self.completed is None:
            stream = watch.Watch()
            try:
                for event in stream.stream(batch.list_namespaced_job, namespace, timeout_seconds=5):
                    job = event["object"]
                    if job.metadata.name == name and _job_condition(job, "Complete"):
                        self.completed = job
                        return
                    if self._stop.is_set():
                        return
            except (client.ApiException, OSError):
                time.sleep(0.2)
            finally:
                stream.stop()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def _condition(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond["type"] == type_ and cond["status"] == "True":
            return dict(cond)
    return None


def _job_condition(job: Any, type_: str) -> bool:
    if job is None or job.status is None:
        return False
    return any(c.type == type_ and c.status == "True" for c in job.status.conditions or ())


def _completed_job(cluster: Cluster, name: str) -> Any | None:
    job = cluster.job(name)
    return job if _job_condition(job, "Complete") else None


def _only_workload(cluster: Cluster) -> dict[str, Any] | None:
    items = cluster.workloads()
    return items[0] if len(items) == 1 else None


def _finished_workload(cluster: Cluster) -> dict[str, Any] | None:
    workload = _only_workload(cluster)
    return workload if workload and _condition(workload, "Finished") else None


def _run_a_job_through(
    setup: QueueSetup, manager: Cluster, worker: Cluster, worker_name: str
) -> tuple[dict[str, Any], Any]:
    """Submit one Job on the manager; follow it to the worker and back; return the
    manager's finished Workload and the worker's completed Job."""
    job = setup.job("interop", annotations={RUN_DURATION_ANNOTATION: "3s"})
    completion = worker.watch_completed_job("interop")
    try:
        manager.batch.create_namespaced_job(setup.namespace, job)

        remote = _until(lambda: worker.job("interop"), "the Job copied to the worker")
        assert remote.metadata.labels.get(ORIGIN_LABEL), remote.metadata.labels
        assert remote.spec.managed_by is None, "the worker's copy must be left to its own Kueue"
        remote_workload = _until(
            lambda: (w := _only_workload(worker)) and _condition(w, "Admitted") and w,
            "the remote Workload admitted by the worker",
        )
        admission = (remote_workload.get("status") or {}).get("admission") or {}
        assert admission.get("clusterQueue") == setup.cluster_queue, remote_workload.get("status")
        done = _until(
            lambda: completion.completed,
            "the Job's pod to run and complete on the worker",
            timeout=120,
        )
    finally:
        completion.stop()
    assert done.spec.suspend is False
    assert (done.status.succeeded or 0) == 1

    finished = _until(lambda: _finished_workload(manager), "the manager's Workload Finished")
    assert (finished.get("status") or {}).get("clusterName") == setup.cluster_name(worker_name)
    local = _until(
        lambda: _completed_job(manager, "interop"),
        "the worker's Job status copied to the manager's Job",
    )
    assert local.status.succeeded == 1
    return finished, done


# -- JobSet, both ways --------------------------------------------------------------------
JOBSET = ("jobset.x-k8s.io", "v1alpha2", "jobsets")
FRAMEWORKS = ("batch/job", "jobset.x-k8s.io/jobset", "kubeflow.org/pytorchjob")


def _manager_jobset(setup: QueueSetup, name: str) -> dict[str, Any]:
    """A JobSet for the manager (a driver and two workers, small CPU pods), suspended and
    marked for MultiKueue as fleetq's webhook would have made it."""
    job = setup.job(name, annotations={RUN_DURATION_ANNOTATION: "3s"})

    def replicated(rj_name: str, replicas: int) -> dict[str, Any]:
        spec = {k: v for k, v in job["spec"].items() if k not in ("suspend", "managedBy")}
        return {"name": rj_name, "replicas": replicas, "template": {"spec": spec}}

    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": dict(job["metadata"]),
        "spec": {
            "suspend": True,
            "managedBy": job["spec"]["managedBy"],
            "replicatedJobs": [replicated("driver", 1), replicated("workers", 2)],
        },
    }


def _jobset(cluster: Cluster, name: str) -> dict[str, Any] | None:
    group, version, plural = JOBSET
    try:
        found: dict[str, Any] = cluster.custom.get_namespaced_custom_object(
            group, version, cluster.namespace, plural, name
        )
    except client.ApiException as error:
        if error.status == 404:
            return None
        raise
    return found


def _run_a_jobset_through(
    setup: QueueSetup, manager: Cluster, worker: Cluster, worker_name: str
) -> dict[str, Any]:
    """Submit one JobSet on the manager; follow it to the worker and back; return the
    manager's finished Workload."""
    group, version, plural = JOBSET
    body = _manager_jobset(setup, "interop-js")
    manager.custom.create_namespaced_custom_object(group, version, setup.namespace, plural, body)
    remote = _until(lambda: _jobset(worker, "interop-js"), "the JobSet copied to the worker")
    assert remote["metadata"]["labels"].get(ORIGIN_LABEL), remote["metadata"]["labels"]
    assert not remote["spec"].get("managedBy"), "the worker's copy is left to its own Kueue"
    remote_workload = _until(
        lambda: (w := _only_workload(worker)) and _condition(w, "Admitted") and w,
        "the remote JobSet's Workload admitted by the worker",
    )
    pod_sets = [(p["name"], p["count"]) for p in remote_workload["spec"]["podSets"]]
    assert pod_sets == [("driver", 1), ("workers", 2)]
    finished = _until(
        lambda: _finished_workload(manager), "the manager's Workload Finished", timeout=150
    )
    assert (finished.get("status") or {}).get("clusterName") == setup.cluster_name(worker_name)
    assert _condition(finished, "Finished")["reason"] == "Succeeded"  # type: ignore[index]
    local = _until(
        lambda: (j := _jobset(manager, "interop-js")) and _condition(j, "Completed") and j,
        "the worker's JobSet status copied to the manager's JobSet",
    )
    assert local["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"
    return finished


# -- PyTorchJob, fleetq's hub to upstream's worker ---------------------------------------
PYTORCHJOB = ("kubeflow.org", "v1", "pytorchjobs")


def _manager_pytorchjob(setup: QueueSetup, name: str) -> dict[str, Any]:
    """A PyTorchJob for the manager (a master and two workers, small CPU pods), suspended
    and marked for MultiKueue in its runPolicy as fleetq's webhook would have made it."""
    job = setup.job(name, annotations={RUN_DURATION_ANNOTATION: "3s"})
    template = job["spec"]["template"]
    template["spec"]["containers"][0]["name"] = "pytorch"  # what the operator wants

    def replica(replicas: int) -> dict[str, Any]:
        return {"replicas": replicas, "restartPolicy": "Never", "template": template}

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": dict(job["metadata"]),
        "spec": {
            "runPolicy": {"suspend": True, "managedBy": job["spec"]["managedBy"]},
            "pytorchReplicaSpecs": {"Master": replica(1), "Worker": replica(2)},
        },
    }


def _pytorchjob(cluster: Cluster, name: str) -> dict[str, Any] | None:
    group, version, plural = PYTORCHJOB
    try:
        found: dict[str, Any] = cluster.custom.get_namespaced_custom_object(
            group, version, cluster.namespace, plural, name
        )
    except client.ApiException as error:
        if error.status == 404:
            return None
        raise
    return found


def _run_a_pytorchjob_through(
    setup: QueueSetup, manager: Cluster, worker: Cluster, worker_name: str
) -> dict[str, Any]:
    """Submit one PyTorchJob on the manager; follow it to the worker and back; return the
    manager's finished Workload."""
    group, version, plural = PYTORCHJOB
    body = _manager_pytorchjob(setup, "interop-pt")
    manager.custom.create_namespaced_custom_object(group, version, setup.namespace, plural, body)
    remote = _until(lambda: _pytorchjob(worker, "interop-pt"), "the PyTorchJob on the worker")
    assert remote["metadata"]["labels"].get(ORIGIN_LABEL), remote["metadata"]["labels"]
    assert not remote["spec"]["runPolicy"].get("managedBy"), "left to the worker's Kueue"
    remote_workload = _until(
        lambda: (w := _only_workload(worker)) and _condition(w, "Admitted") and w,
        "the remote PyTorchJob's Workload admitted by upstream Kueue",
    )
    pod_sets = [(p["name"], p["count"]) for p in remote_workload["spec"]["podSets"]]
    assert pod_sets == [("master", 1), ("worker", 2)]
    finished = _until(
        lambda: _finished_workload(manager), "the manager's Workload Finished", timeout=150
    )
    assert (finished.get("status") or {}).get("clusterName") == setup.cluster_name(worker_name)
    assert _condition(finished, "Finished")["reason"] == "Succeeded"  # type: ignore[index]
    _until(
        lambda: (j := _pytorchjob(manager, "interop-pt")) and _condition(j, "Succeeded") and j,
        "the worker's PyTorchJob status copied to the manager's",
    )
    return finished


def _run_through(
    kind: str, setup: QueueSetup, manager: Cluster, worker: Cluster, worker_name: str
) -> dict[str, Any]:
    """Run one job of `kind` through; the manager's finished Workload."""
    if kind == "pytorchjob":
        return _run_a_pytorchjob_through(setup, manager, worker, worker_name)
    if kind == "jobset":
        return _run_a_jobset_through(setup, manager, worker, worker_name)
    return _run_a_job_through(setup, manager, worker, worker_name)[0]


VERSIONS = pytest.mark.parametrize("version", KUEUE_VERSIONS)
KINDS = pytest.mark.parametrize("kind", ["job", "jobset"])
TO_UPSTREAM_KINDS = pytest.mark.parametrize("kind", ["job", "jobset", "pytorchjob"])
"""The hub to an upstream worker also carries a Kubeflow PyTorchJob (the training operator
runs on every cluster of this fleet)."""


@VERSIONS
@TO_UPSTREAM_KINDS
def test_the_hub_dispatches_to_a_worker_running_upstream_kueue(
    interop_fleet: RunningFleet, tmp_path: Path, kind: str, version: str
) -> None:
    suffix = uuid.uuid4().hex[:6]
    setup = QueueSetup(suffix, namespace=f"interop-a-{suffix}", workers=(UPSTREAM_WORKER,))
    member, manager_member = interop_fleet.cluster(UPSTREAM_WORKER), interop_fleet.manager
    install_crd_files(manager_member.kubeconfig, HUB_CRDS)
    worker, manager = Cluster(member, setup.namespace), Cluster(manager_member, setup.namespace)
    kueue = UpstreamKueue(
        member.kubeconfig,
        options=UpstreamKueueOptions(version=version, frameworks=FRAMEWORKS),
        log_path=tmp_path / "upstream-worker.log",
    )
    hub = None
    try:
        kueue.start()
        kueue.wait_ready()
        apply_manifests(member.kubeconfig, setup.worker_manifests())
        kubeconfigs = {UPSTREAM_WORKER: member.kubeconfig.read_text()}
        apply_manifests(manager_member.kubeconfig, setup.manager_manifests(kubeconfigs))
        hub = start_hub(
            manager_member.kubeconfig,
            tmp_path,
            origin=f"interop-{suffix}",
            log_level="info",
            frameworks=FRAMEWORKS,
        )
        wait_ready(hub)
        try:
            finished = _run_through(kind, setup, manager, worker, UPSTREAM_WORKER)
        except AssertionError as failure:
            raise AssertionError(
                f"{failure}\n--- hub log:\n{hub.process.log_tail(4000)}\n"
                f"--- upstream worker log:\n{kueue.log_tail(4000)}"
            ) from failure
        assert finished["status"]["admissionChecks"][0]["state"] == "Ready"
        if kind == "jobset":
            _until(lambda: _jobset(worker, "interop-js") is None, "the remote JobSet removed")
        if kind == "pytorchjob":
            _until(
                lambda: _pytorchjob(worker, "interop-pt") is None, "the remote PyTorchJob removed"
            )
        assert kueue.running(), "upstream Kueue on the worker must still be up"
    finally:
        if hub is not None:
            hub.process.stop()
        kueue.stop()
        remove_cluster_scoped(manager_member.kubeconfig, setup)
        remove_cluster_scoped(member.kubeconfig, setup)
        worker.delete_namespace()
        manager.delete_namespace()
        worker.close()
        manager.close()


@VERSIONS
@KINDS
def test_upstream_kueue_as_manager_dispatches_to_a_worker_running_the_agent(
    interop_fleet: RunningFleet, tmp_path: Path, kind: str, version: str
) -> None:
    suffix = uuid.uuid4().hex[:6]
    setup = QueueSetup(suffix, namespace=f"interop-b-{suffix}", workers=(AGENT_WORKER,))
    member, manager_member = interop_fleet.cluster(AGENT_WORKER), interop_fleet.manager
    install_crd_files(member.kubeconfig, WORKER_CRDS)
    apply_manifests(member.kubeconfig, setup.worker_manifests())
    worker, manager = Cluster(member, setup.namespace), Cluster(manager_member, setup.namespace)
    # The agent's Configuration names no frameworks: it manages every kind fleetq has.
    agent = start_agent(member.kubeconfig, tmp_path, f"{AGENT_WORKER}-{suffix}", log_level="info")
    options = UpstreamKueueOptions(
        version=version,
        multikueue_origin=f"interop-{suffix}",
        gc_interval="10s",
        frameworks=FRAMEWORKS,
    )
    kueue = UpstreamKueue(
        manager_member.kubeconfig, options=options, log_path=tmp_path / "upstream-manager.log"
    )
    try:
        wait_ready(agent)
        kueue.start()
        kueue.wait_ready()
        kubeconfigs = {AGENT_WORKER: member.kubeconfig.read_text()}
        apply_manifests(manager_member.kubeconfig, setup.manager_manifests(kubeconfigs))

        def active_check() -> dict[str, Any] | None:
            check = manager.custom.get_cluster_custom_object(*KUEUE, "admissionchecks", setup.check)
            return _condition(check, "Active")

        _until(active_check, "upstream's MultiKueue AdmissionCheck Active (worker connected)")
        try:
            finished = _run_through(kind, setup, manager, worker, AGENT_WORKER)
        except AssertionError as failure:
            raise AssertionError(
                f"{failure}\n--- agent log:\n{agent.process.log_tail(4000)}\n"
                f"--- upstream manager log:\n{kueue.log_tail(4000)}"
            ) from failure
        assert finished["status"]["admissionChecks"][0]["state"] == "Ready"
        # Upstream removes its remote copies once the manager's Workload is Finished.
        _until(lambda: not worker.workloads(), "upstream to remove the remote Workload")
        assert agent.process.poll() is None, "the agent must still be up"
    finally:
        kueue.stop()
        agent.process.stop()
        remove_cluster_scoped(manager_member.kubeconfig, setup)
        remove_cluster_scoped(member.kubeconfig, setup)
        worker.delete_namespace()
        manager.delete_namespace()
        worker.close()
        manager.close()

"""MultiKueue under failure, on a fleet of its own: worker outages, a killed hub, bad secrets.

These tests break things (a worker's apiserver, the hub process, the kubeconfig Secrets),
so they run on their own small fleet `mkf-<pid>` rather than the session's: a lite manager
and two lite workers (etcd + apiserver; nothing needs pods to run here, what is asserted
is admission on the workers, done by `fleetq agent`). The workers get their kwok-shaped
Node objects, marked Ready, so the agents report capacity and the hub's capacity-aware
dispatcher places each Job on one worker, preferring worker-1 (config order).

The hub runs with workerLostTimeout 20 s and gcInterval 2 s. An `AdmissionLedger` watches
both workers for the whole module and records every remote Workload that was ever
admitted, so "exactly once" means: one admitted remote copy per Job, ever, fleet-wide.
Measured detection and recovery times are printed (run with -s to see them).
"""

from __future__ import annotations

import base64
import contextlib
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from devfleet.cluster_access import ClusterAccess, RunningFleet
from devfleet.cluster_readiness import install_nodes
from devfleet.conditions import condition_of
from devfleet.fleet import Fleet, fleet_home
from devfleet.fleet_spec import ClusterSpec, load_fleet_spec
from devfleet.member_control import MemberControl
from devfleet.multikueue_fleet import MultiKueueFleet, MultiKueueFleetSpec
from devfleet.polling import until
from devfleet.toolchain import missing_binaries
from tests.builders import kwok_job

Json = dict[str, Any]
KUEUE = ("kueue.x-k8s.io", "v1beta2")
NAMESPACE = "mkf-jobs"
LOST_TIMEOUT_SECONDS = 20.0
FLEET_PREFIX = "mkf-"


# -- the module's own fleet ----------------------------------------------------------------


@dataclass
class FailureWorld:
    """The fleet, the MultiKueue processes on it, and outage controls per worker."""

    fleet: Fleet
    running: RunningFleet
    mk: MultiKueueFleet
    ledger: AdmissionLedger
    controls: dict[str, MemberControl]
    """Fleet worker name (worker-1, worker-2) → its outage controls."""

    def cluster_name(self, worker: str) -> str:
        return self.mk.cluster_names[worker]

    def worker_of(self, cluster_name: str) -> str:
        return self.mk.worker_by_cluster_name(cluster_name).name


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FailureWorld]:
    missing = missing_binaries(["kubernetes", "etcd", "kwok"])
    if missing:
        message = "fleet tools not built (" + ", ".join(missing) + "); run `make tools`"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    _remove_fleets_of_dead_runs()
    fleet = Fleet(f"{FLEET_PREFIX}{os.getpid()}")
    spec = load_fleet_spec().with_worker_count(2)
    try:
        running = fleet.up(spec, lite=True, progress=_log)
        for worker_spec in spec.workers:
            _ready_nodes(running.cluster(worker_spec.name), worker_spec)
        mk_spec = MultiKueueFleetSpec(
            workdir=tmp_path_factory.mktemp("mkf"),
            name="mkf",
            namespaces=(NAMESPACE,),
            hub_configuration={
                "multiKueue": {
                    "workerLostTimeout": f"{LOST_TIMEOUT_SECONDS:g}s",
                    "gcInterval": "2s",
                }
            },
        )
        with MultiKueueFleet(running, mk_spec, progress=_log) as mk:
            controls = {w.name: MemberControl(fleet, w.name) for w in running.workers}
            with AdmissionLedger(running.workers, NAMESPACE) as ledger:
                yield FailureWorld(fleet, running, mk, ledger, controls)
    finally:
        _close_api_clients()
        fleet.down(progress=_log)


def _remove_fleets_of_dead_runs() -> None:
    """A run killed outright leaves its fleet behind; its pid in the name tells."""
    fleets = fleet_home() / "fleets"
    for directory in fleets.glob(f"{FLEET_PREFIX}*") if fleets.exists() else ():
        pid = directory.name.removeprefix(FLEET_PREFIX)
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            Fleet(directory.name).down(progress=lambda _: None)


def _ready_nodes(member: ClusterAccess, spec: ClusterSpec) -> None:
    """The worker's Node objects, Ready (no kubelet or node controller runs to change that)."""
    from kubernetes import client

    install_nodes(member, spec)
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kwok"}
    with member.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        for node in core.list_node().items:
            core.patch_node_status(node.metadata.name, {"status": {"conditions": [ready]}})


def _log(line: str) -> None:
    print(line, flush=True)


# -- watching the workers -----------------------------------------------------------------


@dataclass
class AdmissionLedger:
    """Every remote Workload ever seen, and every one ever admitted, per worker.

    One watch per worker, restarted whenever it breaks (a worker outage breaks it). A
    restarted watch lists again, so only a copy created, admitted and deleted entirely
    while the worker could not be watched would be missed.
    """

    workers: tuple[ClusterAccess, ...]
    namespace: str
    seen: dict[str, dict[str, set[str]]] = field(default_factory=dict)
    """Worker → Workload name → uids ever seen."""
    admitted: dict[str, dict[str, set[str]]] = field(default_factory=dict)
    """Worker → Workload name → uids ever seen with Admitted=True."""
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _threads: list[threading.Thread] = field(default_factory=list)

    def __enter__(self) -> AdmissionLedger:
        for member in self.workers:
            self.seen[member.name] = {}
            self.admitted[member.name] = {}
            thread = threading.Thread(target=self._follow, args=(member,), daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=15)

    def admissions(self, workload: str) -> dict[str, set[str]]:
        """Worker → uids of the named Workload ever admitted there (workers without, left out)."""
        with self._lock:
            return {
                worker: set(names[workload])
                for worker, names in self.admitted.items()
                if names.get(workload)
            }

    def admitted_count(self) -> int:
        with self._lock:
            return sum(len(names) for names in self.admitted.values())

    def copies(self, workload: str) -> dict[str, set[str]]:
        with self._lock:
            return {w: set(n[workload]) for w, n in self.seen.items() if n.get(workload)}

    def _follow(self, member: ClusterAccess) -> None:
        from kubernetes import client, watch

        while not self._stop.is_set():
            try:
                with member.api_client() as api_client:
                    custom = client.CustomObjectsApi(api_client)
                    stream = watch.Watch().stream(
                        custom.list_namespaced_custom_object,
                        *KUEUE,
                        self.namespace,
                        "workloads",
                        timeout_seconds=5,
                        _request_timeout=10,
                    )
                    for event in stream:
                        self._record(member.name, event["object"])
                        if self._stop.is_set():
                            return
            except Exception:  # the worker is down or the watch broke: list and watch again
                self._stop.wait(0.5)

    def _record(self, worker: str, workload: Json) -> None:
        meta = workload.get("metadata") or {}
        name, uid = str(meta.get("name")), str(meta.get("uid"))
        admitted = (condition_of(workload, "Admitted") or {}).get("status") == "True"
        with self._lock:
            self.seen[worker].setdefault(name, set()).add(uid)
            if admitted:
                self.admitted[worker].setdefault(name, set()).add(uid)


# -- reading and writing the clusters -----------------------------------------------------


_API_CLIENTS: dict[str, Any] = {}


def _api_client(member: ClusterAccess) -> Any:
    """One kubernetes ApiClient per cluster for the module (closed with the fleet)."""
    key = str(member.kubeconfig)
    if key not in _API_CLIENTS:
        _API_CLIENTS[key] = member.api_client()
    return _API_CLIENTS[key]


def _close_api_clients() -> None:
    for api_client in _API_CLIENTS.values():
        with contextlib.suppress(Exception):
            api_client.close()
    _API_CLIENTS.clear()


def _custom(member: ClusterAccess) -> Any:
    from kubernetes import client

    return client.CustomObjectsApi(_api_client(member))


def _core(member: ClusterAccess) -> Any:
    from kubernetes import client

    return client.CoreV1Api(_api_client(member))


def _batch(member: ClusterAccess) -> Any:
    from kubernetes import client

    return client.BatchV1Api(_api_client(member))


def submit_jobs(world: FailureWorld, *names: str) -> None:
    """Plain Jobs with the queue label, created on the manager (the webhook suspends them)."""
    batch = _batch(world.running.manager)
    for name in names:
        job = kwok_job(name, gpus_per_pod=0, pods=1, run_seconds=1).namespace(NAMESPACE)
        batch.create_namespaced_job(NAMESPACE, job.queue("user-queue").obj())


def manager_workloads(world: FailureWorld) -> dict[str, Json]:
    """The manager's Workloads by the name of the Job owning them."""
    listed = _custom(world.running.manager).list_namespaced_custom_object(
        *KUEUE, NAMESPACE, "workloads"
    )
    by_job: dict[str, Json] = {}
    for workload in listed["items"]:
        for owner in workload["metadata"].get("ownerReferences") or ():
            if owner.get("kind") == "Job":
                by_job[owner["name"]] = workload
    return by_job


def placement(workload: Json | None) -> str | None:
    """The MultiKueueCluster a manager Workload is admitted through (None: not admitted)."""
    if workload is None or (condition_of(workload, "Admitted") or {}).get("status") != "True":
        return None
    return (workload.get("status") or {}).get("clusterName")


def placed_on(world: FailureWorld, job: str, timeout: float = 60.0) -> tuple[Json, str]:
    """Wait until the Job's manager Workload is admitted on a worker; it and the worker."""

    def admitted() -> tuple[Json, str] | None:
        workload = manager_workloads(world).get(job)
        cluster = placement(workload)
        return (workload, world.worker_of(cluster)) if workload and cluster else None

    return until(admitted, f"job {job} admitted on a worker", timeout)


def remote_workload(world: FailureWorld, worker: str, name: str) -> Json | None:
    from kubernetes import client

    try:
        found: Json = _custom(world.running.cluster(worker)).get_namespaced_custom_object(
            *KUEUE, NAMESPACE, "workloads", name
        )
    except client.ApiException as error:
        if error.status == 404:
            return None
        raise
    return found


def remote_job_exists(world: FailureWorld, worker: str, name: str) -> bool:
    from kubernetes import client

    try:
        _batch(world.running.cluster(worker)).read_namespaced_job(name, NAMESPACE)
    except client.ApiException as error:
        if error.status == 404:
            return False
        raise
    return True


def cluster_active(world: FailureWorld, worker: str) -> Json:
    found = _custom(world.running.manager).get_cluster_custom_object(
        *KUEUE, "multikueueclusters", world.cluster_name(worker)
    )
    return condition_of(found, "Active") or {}


def admission_check_active(world: FailureWorld) -> Json:
    found = _custom(world.running.manager).get_cluster_custom_object(
        *KUEUE, "admissionchecks", world.mk.admission_check
    )
    return condition_of(found, "Active") or {}


def wait_active(world: FailureWorld, worker: str, status: str, timeout: float = 60.0) -> Json:
    return until(
        lambda: (c := cluster_active(world, worker)).get("status") == status and c,
        f"MultiKueueCluster of {worker} Active={status}",
        timeout,
    )


def check_state(workload: Json) -> str | None:
    for check in (workload.get("status") or {}).get("admissionChecks") or ():
        return str(check.get("state"))
    return None


def stream_workloads(world: FailureWorld, jobs: list[str]) -> list[str]:
    """Names of the manager Workloads of these Jobs that exist so far."""
    workloads = manager_workloads(world)
    return [workloads[job]["metadata"]["name"] for job in jobs if job in workloads]


def describe(workload: Json | None) -> str:
    """A manager Workload's state in one line, for failure messages."""
    if workload is None:
        return "no Workload"
    status = workload.get("status") or {}
    conditions = {
        c["type"]: f"{c['status']}/{c.get('reason')}" for c in status.get("conditions") or ()
    }
    checks = [(c.get("name"), c.get("state")) for c in status.get("admissionChecks") or ()]
    return f"conditions={conditions} checks={checks} clusterName={status.get('clusterName')}"


def seconds_since(started: float) -> float:
    return round(time.monotonic() - started, 1)


def report(line: str) -> None:
    print(f"[mk-failures] {line}", flush=True)


@contextlib.contextmanager
def hub_unchanged(world: FailureWorld) -> Iterator[None]:
    """The block must not need a hub restart: the same hub process before and after."""
    hub = world.mk.hub
    assert hub is not None and hub.running
    pid = hub.pid
    yield
    assert hub.running and hub.pid == pid, "the hub restarted or died:\n" + hub.log_tail()


# -- the tests ----------------------------------------------------------------------------


def test_a_brief_worker_outage_evicts_nothing(world: FailureWorld) -> None:
    submit_jobs(world, "brief")
    workload, worker = placed_on(world, "brief")
    name = workload["metadata"]["name"]
    copy = until(lambda: remote_workload(world, worker, name), "the remote copy")
    control = world.controls[worker]

    with hub_unchanged(world):
        down_at = time.monotonic()
        control.kill_apiserver()
        inactive = wait_active(world, worker, "False", timeout=15)
        detected = seconds_since(down_at)
        assert inactive["reason"] == "ClientConnectionFailed", inactive
        assert "connection attempts:" in inactive["message"], inactive
        # Back at once (an apiserver takes ~5 s to start): well within workerLostTimeout.
        control.start_apiserver()
        back_at = time.monotonic()
        wait_active(world, worker, "True", timeout=LOST_TIMEOUT_SECONDS)
        reconnected = seconds_since(back_at)
        outage = seconds_since(down_at)
        assert outage < LOST_TIMEOUT_SECONDS - 2, f"the outage lasted {outage}s: not brief"
        # Past the moment the timeout would have expired, had the outage gone on.
        time.sleep(max(0.0, LOST_TIMEOUT_SECONDS + 4.0 - (time.monotonic() - down_at)))

    report(
        f"brief outage: Active=False {detected}s after the kill, Active again {reconnected}s "
        f"after the apiserver was ready ({outage}s after the kill)"
    )
    now = manager_workloads(world)["brief"]
    assert placement(now) == world.cluster_name(worker)
    assert check_state(now) == "Ready"
    assert (condition_of(now, "Evicted") or {}).get("status") != "True"
    assert now["metadata"]["uid"] == workload["metadata"]["uid"]
    still = remote_workload(world, worker, name)
    assert still is not None and still["metadata"]["uid"] == copy["metadata"]["uid"]
    assert world.ledger.copies(name) == {worker: {copy["metadata"]["uid"]}}


def test_a_worker_lost_past_the_timeout_has_its_job_rerun_on_the_other_once(
    world: FailureWorld,
) -> None:
    submit_jobs(world, "lost")
    workload, first = placed_on(world, "lost")
    name = workload["metadata"]["name"]
    until(lambda: remote_workload(world, first, name), "the remote copy")
    other = next(w for w in world.controls if w != first)
    control = world.controls[first]

    with hub_unchanged(world):
        down_at = time.monotonic()
        control.kill_apiserver()
        try:
            inactive = wait_active(world, first, "False", timeout=15)
            detected = seconds_since(down_at)
            assert inactive["reason"] == "ClientConnectionFailed", inactive
            assert "connection refused by" in inactive["message"], inactive  # down, not broken
            check = until(
                lambda: (
                    (c := admission_check_active(world)).get("reason") == "SomeActiveClusters" and c
                ),
                "the AdmissionCheck to name the inactive cluster",
                15,
            )
            assert check["status"] == "True", check
            assert check["message"] == f"Inactive clusters: [{world.cluster_name(first)}]"

            def moved() -> str | None:
                cluster = placement(manager_workloads(world).get("lost"))
                return cluster if cluster == world.cluster_name(other) else None

            until(moved, f"job lost re-admitted on {other}", LOST_TIMEOUT_SECONDS + 45)
            moved_after = seconds_since(down_at)
            assert moved_after >= LOST_TIMEOUT_SECONDS - 1, "evicted before workerLostTimeout"
            until(lambda: world.ledger.admissions(name).get(other), f"the copy on {other}")
        finally:
            restart_at = time.monotonic()
            control.start_apiserver()
        wait_active(world, first, "True", timeout=90)
        reconnected = seconds_since(restart_at)
        until(
            lambda: (
                remote_workload(world, first, name) is None
                and not remote_job_exists(world, first, "lost")
            ),
            f"the stale copy on {first} removed",
            timeout=30,
        )
        collected = seconds_since(restart_at)

    report(
        f"worker lost: Active=False after {detected}s, re-admitted on {other} {moved_after}s "
        f"after the kill (timeout {LOST_TIMEOUT_SECONDS:g}s); after restart Active in "
        f"{reconnected}s, stale copy gone in {collected}s"
    )
    final = manager_workloads(world)["lost"]
    assert placement(final) == world.cluster_name(other)
    on_other = world.ledger.admissions(name)[other]
    assert len(on_other) == 1, on_other
    still = remote_workload(world, other, name)
    assert still is not None and still["metadata"]["uid"] in on_other
    assert remote_job_exists(world, other, "lost")


def test_a_hub_killed_mid_dispatch_loses_and_duplicates_nothing(world: FailureWorld) -> None:
    jobs = [f"stream-{index:02d}" for index in range(30)]
    before = world.ledger.admitted_count()
    submit_jobs(world, *jobs)
    # Kill at the first remote copy of the stream: most of it is still to be dispatched.
    until(lambda: any(world.ledger.copies(w) for w in stream_workloads(world, jobs)), "a copy", 60)
    assert world.mk.hub is not None
    world.mk.hub.kill()
    killed_at = time.monotonic()
    dispatched_at_kill = world.ledger.admitted_count() - before
    world.mk.start_hub()
    world.mk.wait_ready(timeout=90)
    restarted = seconds_since(killed_at)

    waiting: dict[str, str] = {}

    def all_placed() -> dict[str, Json] | None:
        workloads = manager_workloads(world)
        placed = {job: workloads[job] for job in jobs if placement(workloads.get(job))}
        waiting.clear()
        waiting.update({job: describe(workloads.get(job)) for job in jobs if job not in placed})
        return placed if len(placed) == len(jobs) else None

    try:
        placed = until(all_placed, "all 30 jobs admitted on workers", 90)
    except AssertionError as error:
        hint = ""
        if any(
            "'Ready')]" in state and "clusterName=None" not in state for state in waiting.values()
        ):
            hint = (
                "\n(check Ready and clusterName set but never Admitted: the restarted hub's "
                "engine does not admit a reserved workload whose checks are all Ready when it "
                "adopts it: core/engine/engine.py Engine._attach_reserving)"
            )
        raise AssertionError(f"{error}\nnot placed: {waiting}{hint}") from None
    settled = seconds_since(killed_at)
    report(
        f"hub kill -9 with {dispatched_at_kill}/30 admitted remotely: hub ready again in "
        f"{restarted}s, all 30 admitted {settled}s after the kill"
    )
    time.sleep(3)  # let any duplicate that was going to appear, appear
    for job, workload in placed.items():
        name = workload["metadata"]["name"]
        worker = world.worker_of(placement(workload) or "")
        admissions = world.ledger.admissions(name)
        assert admissions.keys() == {worker}, (job, admissions)
        assert len(admissions[worker]) == 1, (job, admissions)
        others = [w for w in world.controls if w != worker]
        assert all(remote_workload(world, w, name) is None for w in others), job
        assert remote_workload(world, worker, name) is not None, job
        assert remote_job_exists(world, worker, job), job


def test_kubeconfig_secrets_bad_then_fixed_and_rotated_without_a_hub_restart(
    world: FailureWorld,
) -> None:
    worker = "worker-1"
    secret_name = f"{world.cluster_name(worker)}-kubeconfig"
    namespace = world.mk.hub_namespace
    core = _core(world.running.manager)
    good = core.read_namespaced_secret(secret_name, namespace).data["kubeconfig"]

    def put(kubeconfig_b64: str) -> None:
        core.patch_namespaced_secret(
            secret_name, namespace, {"data": {"kubeconfig": kubeconfig_b64}}
        )

    with hub_unchanged(world):
        # A Secret whose kubeconfig cannot be parsed: misconfigured, not unreachable
        # (InsecureKubeConfig, as upstream: its validateKubeconfig refuses what won't parse).
        started = time.monotonic()
        put(base64.b64encode(b"clusters: [unterminated").decode())
        bad = wait_active(world, worker, "False", timeout=20)
        assert bad["reason"] == "InsecureKubeConfig", bad
        assert "connection attempts" not in bad["message"], bad
        bad_after = seconds_since(started)
        started = time.monotonic()
        put(good)
        wait_active(world, worker, "True", timeout=30)
        fixed_after = seconds_since(started)

        # The hub's token revoked (its ServiceAccount re-created): the worker refuses it.
        identity = world.mk.fleet_file().identity
        member = world.running.cluster(worker)
        _core(member).delete_namespaced_service_account(
            identity.service_account, identity.namespace
        )
        started = time.monotonic()
        revoked = wait_active(world, worker, "False", timeout=30)
        assert revoked["reason"] == "ClientConnectionFailed", revoked
        assert "Unauthorized" in revoked["message"], revoked
        revoked_after = seconds_since(started)

        # `fleetq join --rotate` mints a new token into the Secret: the hub picks it up.
        started = time.monotonic()
        rotate(world)
        assert core.read_namespaced_secret(secret_name, namespace).data["kubeconfig"] != good
        wait_active(world, worker, "True", timeout=30)
        rotated_after = seconds_since(started)

        # And the new credentials carry dispatch: a new Job lands on the preferred worker.
        submit_jobs(world, "after-rotation")
        _, placed = placed_on(world, "after-rotation", timeout=60)
        assert placed == worker

    report(
        f"secrets: InsecureKubeConfig shown in {bad_after}s, Active {fixed_after}s after the fix; "
        f"revoked token noticed in {revoked_after}s, Active {rotated_after}s after rotation"
    )


def rotate(world: FailureWorld) -> None:
    """What `fleetq join --rotate` does, in process, over the fleet's own fleet file."""
    from cli.join.join_run import JoinOptions, run_join

    outcome = run_join(world.mk.fleet_file(), JoinOptions(rotate=True))
    assert outcome.ok, "; ".join(notice.text for notice in outcome.errors)

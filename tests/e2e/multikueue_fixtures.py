"""The MultiKueue fleet for e2e tests: one hub and two agents shared by consecutive tests.

Bringing the hub, the agents and the join up takes ~20 s, so tests share one
`MultiKueueFleet` (devfleet.multikueue_fleet) on the session's full fleet and isolate by
namespace (`mk_namespace`: its own namespace with the LocalQueue on every cluster). It is
started by the first test that asks for it and stopped as soon as the next test does not
(`stop_when_unused`, called from the e2e conftest), because a hub on the manager acts on
every Workload there, and an agent on every ClusterQueue of its worker: tests that run
their own hub, agent or upstream Kueue must never overlap it.

Helpers that read the manager's and the workers' objects live here too, so each test
states behaviour rather than plumbing.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from devfleet.cluster_access import ClusterAccess, RunningFleet
from devfleet.conditions import condition_of
from devfleet.multikueue_fleet import MultiKueueFleet, MultiKueueFleetSpec
from devfleet.polling import until
from tests.builders import kwok_job

T = TypeVar("T")
Json = dict[str, Any]
KUEUE = ("kueue.x-k8s.io", "v1beta2")
FLEETQ = ("fleetq.dev", "v1alpha1")
ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"
FIXTURE_NAME = "multikueue_fleet"
FRAMEWORKS = (
    "batch/job",
    "jobset.x-k8s.io/jobset",
    "kubeflow.org/pytorchjob",
    "kubeflow.org/tfjob",
    "kubeflow.org/xgboostjob",
    "kubeflow.org/paddlejob",
    "kubeflow.org/jaxjob",
    "kubeflow.org/mpijob",
    "ray.io/rayjob",
    "ray.io/raycluster",
    "ray.io/rayservice",
    "trainer.kubeflow.org/trainjob",
)
"""The shared hub's `integrations.frameworks`: every kind whose operator the fleet runs."""

__all__ = [
    "ClusterView",
    "MultiKueueSession",
    "RemoteWatch",
    "condition_of",
    "metric_value",
    "mk_namespace",
    "mk_namespace_factory",
    "multikueue_fleet",
    "multikueue_session",
    "queued_job",
    "stop_when_unused",
    "until",
]


class MultiKueueSession:
    """Starts the shared MultiKueue fleet on first use; stops it when no test needs it."""

    def __init__(self, fleet: RunningFleet, workdir: Path) -> None:
        self.fleet = fleet
        self.workdir = workdir
        self.current: MultiKueueFleet | None = None
        self.starts = 0

    def get(self) -> MultiKueueFleet:
        if self.current is None:
            self.starts += 1
            name = f"mk{os.getpid() % 10000}-{self.starts}"
            spec = MultiKueueFleetSpec(
                workdir=self.workdir / name,
                name=name,
                hub_configuration={
                    # Every kind whose operator the fleet runs on every cluster.
                    "integrations": {"frameworks": list(FRAMEWORKS)},
                    "multiKueue": {
                        "gcInterval": "5s",
                        # A nominee that cannot admit is given up on sooner than in
                        # production, so fallback paths finish within a test's time.
                        "capacityAwareDispatcherConfig": {"nominationTimeout": "20s"},
                    },
                },
                # Room on the manager beyond the workers', so the workers' own admission
                # and preemption are what a test exercises.
                manager_quota={"cpu": "2000", "memory": "20Ti", "nvidia.com/gpu": "400"},
            )
            mk = MultiKueueFleet(self.fleet, spec, progress=_log)
            mk.__enter__()
            self.current = mk
        return self.current

    def stop(self) -> None:
        if self.current is not None:
            mk, self.current = self.current, None
            mk.stop()


def _log(line: str) -> None:
    print(line, flush=True)


_SESSIONS: list[MultiKueueSession] = []


@pytest.fixture(scope="session")
def multikueue_session(
    full_fleet: RunningFleet, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MultiKueueSession]:
    session = MultiKueueSession(full_fleet, tmp_path_factory.mktemp("multikueue"))
    _SESSIONS.append(session)
    try:
        yield session
    finally:
        session.stop()
        _SESSIONS.remove(session)


@pytest.fixture
def multikueue_fleet(multikueue_session: MultiKueueSession) -> MultiKueueFleet:
    """The shared hub + agents (see module docstring); started when first asked for."""
    mk = multikueue_session.get()
    for process in (mk.hub, *mk.agents.values()):
        assert process is not None and process.running, (
            f"{process and process.label} is not running:\n{process and process.log_tail()}"
        )
    return mk


def stop_when_unused(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """After `item`: stop the shared fleet unless the next test uses it too."""
    if nextitem is not None and FIXTURE_NAME in getattr(nextitem, "fixturenames", ()):
        return
    for session in _SESSIONS:
        session.stop()


NamespaceMaker = Callable[[], str]


@pytest.fixture
def mk_namespace_factory(multikueue_fleet: MultiKueueFleet) -> Iterator[NamespaceMaker]:
    """New namespaces that dispatch (LocalQueue on manager and workers); removed after."""
    made: list[str] = []

    def make() -> str:
        name = f"mk-{uuid.uuid4().hex[:8]}"
        multikueue_fleet.add_namespace(name)
        made.append(name)
        return name

    yield make
    for name in made:
        multikueue_fleet.remove_namespace(name)


@pytest.fixture
def mk_namespace(mk_namespace_factory: NamespaceMaker) -> str:
    return mk_namespace_factory()


@dataclass
class ClusterView:
    """Reads and writes on one cluster, in one namespace, through the kubernetes client."""

    member: ClusterAccess
    namespace: str
    api_client: Any

    @classmethod
    @contextlib.contextmanager
    def open(cls, member: ClusterAccess, namespace: str) -> Iterator[ClusterView]:
        with member.api_client() as api_client:
            yield cls(member, namespace, api_client)

    @property
    def custom(self) -> Any:
        from kubernetes import client

        return client.CustomObjectsApi(self.api_client)

    @property
    def batch(self) -> Any:
        from kubernetes import client

        return client.BatchV1Api(self.api_client)

    @property
    def core(self) -> Any:
        from kubernetes import client

        return client.CoreV1Api(self.api_client)

    def create_job(self, job: Json) -> None:
        self.batch.create_namespaced_job(self.namespace, job)

    def job(self, name: str) -> Json | None:
        return self._maybe(
            lambda: self.api_client.sanitize_for_serialization(
                self.batch.read_namespaced_job(name, self.namespace)
            )
        )

    def jobs(self) -> list[Json]:
        listed = self.batch.list_namespaced_job(self.namespace)
        return [self.api_client.sanitize_for_serialization(job) for job in listed.items]

    def workloads(self) -> list[Json]:
        listed = self.custom.list_namespaced_custom_object(*KUEUE, self.namespace, "workloads")
        return list(listed["items"])

    def workload(self, name: str) -> Json | None:
        return self._maybe(
            lambda: self.custom.get_namespaced_custom_object(
                *KUEUE, self.namespace, "workloads", name
            )
        )

    def workload_of_job(self, job_name: str) -> Json | None:
        for workload in self.workloads():
            owners = workload["metadata"].get("ownerReferences") or ()
            if any(o.get("kind") == "Job" and o.get("name") == job_name for o in owners):
                return workload
        return None

    def cluster_object(self, plural: str, name: str, group: tuple[str, str] = KUEUE) -> Json | None:
        return self._maybe(lambda: self.custom.get_cluster_custom_object(*group, plural, name))

    def placement(self, job_name: str) -> str | None:
        """The worker the Job's Workload was admitted on (status.clusterName)."""
        workload = self.workload_of_job(job_name) or {}
        name = (workload.get("status") or {}).get("clusterName")
        return str(name) if name else None

    def job_workload_is(self, job_name: str, condition: str) -> bool:
        """Whether the Job's Workload has `condition` True."""
        found = condition_of(self.workload_of_job(job_name), condition) or {}
        return found.get("status") == "True"

    def scheduled_pods(self, job_name: str) -> list[Any]:
        return [pod for pod in self.pods(job_name) if pod.spec.node_name]

    def pods(self, job_name: str) -> list[Any]:
        selector = f"job-name={job_name}"
        return list(self.core.list_namespaced_pod(self.namespace, label_selector=selector).items)

    @staticmethod
    def _maybe(read: Callable[[], T]) -> T | None:
        from kubernetes import client

        try:
            return read()
        except client.ApiException as error:
            if error.status == 404:
                return None
            raise


@dataclass(frozen=True, slots=True)
class RemoteEvent:
    """One watch event of a Workload on a worker."""

    cluster: str
    kind: str
    """ADDED, MODIFIED or DELETED."""
    name: str
    uid: str
    admitted: bool
    evicted_reason: str | None


class RemoteWatch:
    """Every Workload event in one namespace of each worker, from before the test acts.

    Remote copies are deleted once their job finishes, so counting them afterwards says
    nothing; the watch sees each copy created, admitted and evicted, however short-lived.
    """

    def __init__(self, workers: tuple[ClusterAccess, ...], namespace: str) -> None:
        self.events: list[RemoteEvent] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._ready = threading.Barrier(len(workers) + 1)
        self._threads = [
            threading.Thread(target=self._watch, args=(w, namespace), daemon=True) for w in workers
        ]

    def __enter__(self) -> RemoteWatch:
        for thread in self._threads:
            thread.start()
        self._ready.wait(timeout=30)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        for thread in self._threads:
            thread.join(timeout=15)

    def _watch(self, member: ClusterAccess, namespace: str) -> None:
        from kubernetes import client, watch

        with member.api_client() as api_client:
            custom = client.CustomObjectsApi(api_client)
            listed = custom.list_namespaced_custom_object(*KUEUE, namespace, "workloads")
            version = listed["metadata"]["resourceVersion"]
            for item in listed["items"]:
                self._record(member.name, "ADDED", item)
            self._ready.wait(timeout=30)
            while not self._stopping.is_set():
                stream = watch.Watch()
                try:
                    for event in stream.stream(
                        custom.list_namespaced_custom_object,
                        *KUEUE,
                        namespace,
                        "workloads",
                        resource_version=version,
                        timeout_seconds=2,
                    ):
                        obj = event["object"]
                        version = obj["metadata"]["resourceVersion"]
                        self._record(member.name, event["type"], obj)
                        if self._stopping.is_set():
                            break
                finally:
                    stream.stop()

    def _record(self, cluster: str, kind: str, obj: Json) -> None:
        evicted = condition_of(obj, "Evicted") or {}
        event = RemoteEvent(
            cluster=cluster,
            kind=kind,
            name=obj["metadata"]["name"],
            uid=obj["metadata"]["uid"],
            admitted=(condition_of(obj, "Admitted") or {}).get("status") == "True",
            evicted_reason=evicted.get("reason") if evicted.get("status") == "True" else None,
        )
        with self._lock:
            self.events.append(event)

    def copies(self, name: str) -> set[tuple[str, str]]:
        """(cluster, uid) of every copy of the manager Workload `name` ever seen."""
        with self._lock:
            return {(e.cluster, e.uid) for e in self.events if e.name == name}

    def admitted_copies(self, name: str) -> set[tuple[str, str]]:
        with self._lock:
            return {(e.cluster, e.uid) for e in self.events if e.name == name and e.admitted}

    def evictions(self, reason: str | None = None) -> set[tuple[str, str, str]]:
        """(cluster, name, uid) of copies seen evicted (for `reason`, when given)."""
        with self._lock:
            return {
                (e.cluster, e.name, e.uid)
                for e in self.events
                if e.evicted_reason is not None and reason in (None, e.evicted_reason)
            }


def queued_job(name: str, queue: str | None, *, run_seconds: float, **shape: Any) -> dict[str, Any]:
    """`devfleet.sample_jobs.gpu_job` (as `tests.builders.kwok_job`) with the queue label."""
    job = kwok_job(name, run_seconds=run_seconds, **shape)
    if queue is not None:
        job.queue(queue)
    return job.obj()


def metric_value(port: int, name: str, **labels: str) -> float:
    """The sum of a Prometheus metric's samples whose labels include `labels`."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    total = 0.0
    pattern = re.compile(rf"^{re.escape(name)}(?:\{{(.*)\}})? (\S+)$")
    for line in text.splitlines():
        match = pattern.match(line)
        if not match:
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', match.group(1) or ""))
        if all(found.get(k) == v for k, v in labels.items()):
            total += float(match.group(2))
    return total


def wait_gone(probe: Callable[[], Any], what: str, timeout: float = 60.0) -> None:
    """Wait until `probe` returns something falsy."""
    until(lambda: not probe(), what, timeout)


def elapsed_since(started: float) -> float:
    return time.monotonic() - started

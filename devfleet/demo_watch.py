"""Watching the demo's jobs: what the manager says about each, and where its pods run.

The manager tells the story of a job through its Workload: queued (no quota yet),
dispatching (quota reserved, the MultiKueue check looking for a worker), running on a
worker (Admitted, `status.clusterName`), finished; the Workload's owner is the Job or the
JobSet. The workers tell where the pods really are: each pod's node, and that node's pool
(a Job's pods carry `job-name`, a JobSet's `jobset.sigs.k8s.io/jobset-name` and the name of
their replicated job, a RayJob's head and workers the demo's `fleetq.dev/demo-rayjob`,
a PyTorchJob's `training.kubeflow.org/job-name`). A serving Deployment created on a worker
has no Workload on the manager: its replicas are each a Pod queued by that worker's agent,
and the record follows its pods there (gated: queued; every replica scheduled and
ungated: serving). Times are measured by the demo from what it observes (to within a
poll), relative to the first submission.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from devfleet.cluster_access import ClusterAccess, RunningFleet
from devfleet.demo_jobs import (
    ADMISSION_GATE,
    APP_LABEL,
    JOB_NAME_LABEL,
    JOBSET_NAME_LABEL,
    KUBEFLOW_JOB_NAME_LABEL,
    NAMESPACES,
    POOL_LABEL,
    RAYJOB_POD_LABEL,
    REPLICATED_JOB_LABEL,
    DemoJob,
    JobApi,
)

KUEUE = ("kueue.x-k8s.io", "v1beta2")


class JobState(StrEnum):
    WAITING_TO_SUBMIT = "not submitted"
    SUBMITTED = "submitted"
    QUEUED = "queued"
    DISPATCHING = "dispatching"
    RUNNING = "running"
    SERVING = "serving"
    """A Deployment with every replica admitted and running (it never finishes)."""
    SUCCEEDED = "succeeded"
    FAILED = "failed"

    @property
    def done(self) -> bool:
        return self in (JobState.SUCCEEDED, JobState.FAILED, JobState.SERVING)

    @property
    def succeeded(self) -> bool:
        """Ended as the demo wants: finished well, or serving."""
        return self in (JobState.SUCCEEDED, JobState.SERVING)


@dataclass
class JobRecord:
    """What the demo has seen of one job so far (seconds since the first submission)."""

    job: DemoJob
    state: JobState = JobState.WAITING_TO_SUBMIT
    submitted: float | None = None
    admitted: float | None = None
    finished: float | None = None
    worker: str | None = None
    nominated: tuple[str, ...] = ()
    nodes: set[str] = field(default_factory=set)
    """"worker/node" of every pod seen scheduled."""
    pools: set[str] = field(default_factory=set)
    replicated_nodes: dict[str, set[str]] = field(default_factory=dict)
    """A JobSet's nodes by replicated job ("driver", "workers")."""

    def waited_until(self, now: float) -> float | None:
        """Time queued: submission to admission on a worker (still counting if not yet)."""
        if self.submitted is None:
            return None
        end = self.admitted if self.admitted is not None else now
        return max(0.0, end - self.submitted)

    def ran_until(self, now: float) -> float | None:
        """Time running: admission on a worker to finish (still counting if not yet)."""
        if self.admitted is None:
            return None
        end = self.finished if self.finished is not None else now
        return max(0.0, end - self.admitted)


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for entry in (obj.get("status") or {}).get("conditions") or ():
        if entry.get("type") == kind:
            return dict(entry)
    return None


def _true(obj: dict[str, Any], kind: str) -> bool:
    found = _condition(obj, kind)
    return found is not None and found.get("status") == "True"


class FleetObserver:
    """Reads the manager's Jobs and Workloads and the workers' pods, updates the records."""

    def __init__(self, fleet: RunningFleet, records: dict[str, JobRecord], started: float):
        self.fleet = fleet
        self.records = records
        self.started = started
        self._clients: dict[str, Any] = {}
        self._pools: dict[str, dict[str, str]] = {}

    @contextlib.contextmanager
    def opened(self) -> Iterator[FleetObserver]:
        try:
            for member in self.fleet.all:
                self._clients[member.name] = member.api_client()
            for worker in self.fleet.workers:
                self._pools[worker.name] = self._node_pools(worker)
            yield self
        finally:
            for api_client in self._clients.values():
                with contextlib.suppress(Exception):
                    api_client.close()
            self._clients.clear()

    def now(self) -> float:
        return time.monotonic() - self.started

    def _node_pools(self, worker: ClusterAccess) -> dict[str, str]:
        from kubernetes import client

        nodes = client.CoreV1Api(self._clients[worker.name]).list_node().items
        return {n.metadata.name: (n.metadata.labels or {}).get(POOL_LABEL, "-") for n in nodes}

    def observe(self) -> list[str]:
        """Update every record; one line per state change, for logs without a live table."""
        changes = []
        now = self.now()
        for namespace in NAMESPACES:
            for workload in self._workloads(namespace):
                owners = workload["metadata"].get("ownerReferences") or [{}]
                record = self.records.get(f"{namespace}/{owners[0].get('name')}")
                if record is not None and owners[0].get("kind") != record.job.api.kind:
                    record = None
                if record is not None and not record.state.done:
                    line = self._update(record, workload, now)
                    if line:
                        changes.append(line)
        for worker in self.fleet.workers:
            changes += self._observe_pods(worker)
        return changes

    def _workloads(self, namespace: str) -> list[dict[str, Any]]:
        from kubernetes import client

        custom = client.CustomObjectsApi(self._clients[self.fleet.manager.name])
        listed = custom.list_namespaced_custom_object(*KUEUE, namespace, "workloads")
        return list(listed.get("items") or [])

    def _update(self, record: JobRecord, workload: dict[str, Any], now: float) -> str | None:
        status = workload.get("status") or {}
        before = record.state
        record.nominated = tuple(status.get("nominatedClusterNames") or ())
        if status.get("clusterName"):
            record.worker = str(status["clusterName"])
        if _true(workload, "Finished"):
            finished = _condition(workload, "Finished") or {}
            failed = "fail" in str(finished.get("reason", "")).lower()
            record.state = JobState.FAILED if failed else JobState.SUCCEEDED
            record.finished = now
            if record.admitted is None:
                record.admitted = now
        elif _true(workload, "Admitted"):
            record.state = JobState.RUNNING
            if record.admitted is None:
                record.admitted = now
        elif _true(workload, "QuotaReserved"):
            record.state = JobState.DISPATCHING
        else:
            record.state = JobState.QUEUED
        if record.state is before:
            return None
        where = f" on {record.worker}" if record.state is JobState.RUNNING else ""
        return f"[{now:5.1f}s] {record.job.key}: {before.value} -> {record.state.value}{where}"

    def _observe_pods(self, worker: ClusterAccess) -> list[str]:
        from kubernetes import client

        core = client.CoreV1Api(self._clients[worker.name])
        pools = self._pools.get(worker.name, {})
        serving: dict[str, list[Any]] = {}
        for namespace in NAMESPACES:
            for pod in core.list_namespaced_pod(namespace).items:
                labels = pod.metadata.labels or {}
                deployment = self.records.get(f"{namespace}/{labels.get(APP_LABEL)}")
                if deployment is not None and deployment.job.api is JobApi.DEPLOYMENT:
                    if pod.metadata.deletion_timestamp is None:
                        serving.setdefault(deployment.job.key, []).append(pod)
                    continue
                # A JobSet's pods also carry their child Job's `job-name`: the JobSet wins.
                if RAYJOB_POD_LABEL in labels:
                    api, owner = JobApi.RAYJOB, labels.get(RAYJOB_POD_LABEL)
                elif KUBEFLOW_JOB_NAME_LABEL in labels:
                    api, owner = JobApi.PYTORCHJOB, labels.get(KUBEFLOW_JOB_NAME_LABEL)
                else:
                    api = JobApi.JOBSET if JOBSET_NAME_LABEL in labels else JobApi.JOB
                    owner = labels.get(JOBSET_NAME_LABEL) or labels.get(JOB_NAME_LABEL)
                record = self.records.get(f"{namespace}/{owner}")
                node = pod.spec.node_name
                if owner is None or record is None or record.job.api is not api or not node:
                    continue
                record.nodes.add(f"{worker.name}/{node}")
                record.pools.add(pools.get(node) or self._pool_of(worker, node))
                if api is JobApi.JOBSET:
                    replicated = labels.get(REPLICATED_JOB_LABEL, "-")
                    record.replicated_nodes.setdefault(replicated, set()).add(
                        f"{worker.name}/{node}"
                    )

        return [
            line
            for key, pods in serving.items()
            if (line := self._update_serving(self.records[key], worker, pods)) is not None
        ]

    def _update_serving(
        self, record: JobRecord, worker: ClusterAccess, pods: list[Any]
    ) -> str | None:
        """A Deployment's record from its live pods on `worker`."""
        if record.state.done or record.job.cluster != worker.name:
            return None
        before = record.state
        running = [
            p
            for p in pods
            if p.spec.node_name
            and not any(g.name == ADMISSION_GATE for g in p.spec.scheduling_gates or ())
        ]
        pools = self._pools.get(worker.name, {})
        for pod in running:
            record.nodes.add(f"{worker.name}/{pod.spec.node_name}")
            record.pools.add(
                pools.get(pod.spec.node_name) or self._pool_of(worker, pod.spec.node_name)
            )
        now = self.now()
        if len(running) >= record.job.pods:
            record.state, record.worker, record.admitted = JobState.SERVING, worker.name, now
        elif pods:
            record.state = JobState.QUEUED
        if record.state is before:
            return None
        where = f" on {worker.name}" if record.state is JobState.SERVING else ""
        return f"[{now:5.1f}s] {record.job.key}: {before.value} -> {record.state.value}{where}"

    def _pool_of(self, worker: ClusterAccess, node: str) -> str:
        """A node not seen at start (none are added in the demo, but be exact)."""
        self._pools[worker.name] = self._node_pools(worker)
        return self._pools[worker.name].get(node, "-")

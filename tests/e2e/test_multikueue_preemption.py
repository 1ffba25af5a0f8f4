"""Priorities across MultiKueue: preemption on one worker only, priority changes follow.

Both workers' GPU nodes are filled with low-priority 8-GPU jobs (the manager has room to
spare, so admission there takes nothing from anyone). A high-priority 8-GPU job fits no
worker without preemption; the capacity-aware dispatcher gives it to one worker at a
time, so exactly one low-priority copy is preempted — on that worker — and none on the
other. The preempted job loses its admission on the worker and is dispatched again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest

from devfleet.cluster_access import ClusterAccess
from devfleet.multikueue_fleet import MultiKueueFleet
from tests.builders import WorkloadPriorityClass, kwok_job
from tests.e2e.multikueue_fixtures import (
    ClusterView,
    RemoteWatch,
    condition_of,
    until,
)

PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"


@contextlib.contextmanager
def priority_classes(members: tuple[ClusterAccess, ...], classes: dict[str, int]) -> Iterator[None]:
    """WorkloadPriorityClasses on every cluster (the workers judge the copies by them)."""
    from kubernetes import client

    for member in members:
        with member.api_client() as api_client:
            custom = client.CustomObjectsApi(api_client)
            for name, value in classes.items():
                custom.create_cluster_custom_object(
                    "kueue.x-k8s.io",
                    "v1beta2",
                    "workloadpriorityclasses",
                    WorkloadPriorityClass(name, value).obj(),
                )
    try:
        yield
    finally:
        for member in members:
            with member.api_client() as api_client:
                custom = client.CustomObjectsApi(api_client)
                for name in classes:
                    with contextlib.suppress(client.ApiException):
                        custom.delete_cluster_custom_object(
                            "kueue.x-k8s.io", "v1beta2", "workloadpriorityclasses", name
                        )


def _gpu_nodes(member: ClusterAccess) -> int:
    from kubernetes import client

    with member.api_client() as api_client:
        nodes = client.CoreV1Api(api_client).list_node(label_selector="fleetq.dev/node-pool=gpu")
    return len(nodes.items)


def _prioritised(name: str, queue: str, priority: str, run_seconds: float) -> dict[str, Any]:
    job = kwok_job(name, gpus_per_pod=8, pods=1, run_seconds=run_seconds)
    return job.queue(queue).priority_class(priority).obj()


@pytest.fixture
def classes(multikueue_fleet: MultiKueueFleet, mk_namespace: str) -> Iterator[tuple[str, str]]:
    low, high = f"{mk_namespace}-low", f"{mk_namespace}-high"
    members = (multikueue_fleet.fleet.manager, *multikueue_fleet.workers)
    with priority_classes(members, {low: 10, high: 1000}):
        yield low, high


def test_a_high_priority_job_preempts_on_one_worker_only(
    multikueue_fleet: MultiKueueFleet, mk_namespace: str, classes: tuple[str, str]
) -> None:
    mk = multikueue_fleet
    low, high = classes
    queue = mk.spec.local_queue
    slots = sum(_gpu_nodes(member) for member in mk.workers)
    with (
        RemoteWatch(mk.workers, mk_namespace) as remote,
        ClusterView.open(mk.fleet.manager, mk_namespace) as manager,
    ):
        # One low-priority job per GPU node, each placed before the next is sent, so every
        # placement reads a report that already counts the jobs before it.
        for index in range(slots):
            name = f"low-{index}"
            manager.create_job(_prioritised(name, queue, low, run_seconds=600))
            until(partial(manager.placement, name), f"{name} placed", timeout=90)
        for member in mk.workers:
            with ClusterView.open(member, mk_namespace) as view:
                until(
                    partial(_all_admitted, view),
                    f"the low-priority copies admitted on {member.name}",
                    timeout=60,
                )

        manager.create_job(_prioritised("urgent", queue, high, run_seconds=2))
        until(partial(manager.job_workload_is, "urgent", "Finished"), "urgent done", 120)
        urgent = (manager.workload_of_job("urgent") or {})["metadata"]["name"]

        preempted = remote.evictions("Preempted")
        assert len(preempted) == 1, f"preempted copies: {sorted(preempted)}"
        ((cluster, victim, _),) = preempted
        urgent_copies = remote.copies(urgent)
        assert {c for c, _ in urgent_copies} == {cluster}, "urgent was sent to one worker only"
        assert len(urgent_copies) == 1

        # The preempted job lost its worker admission: the manager dispatches it again.
        until(
            lambda: len(remote.admitted_copies(victim)) >= 2,
            f"{victim} admitted again after its preemption",
            timeout=120,
        )


def test_a_priority_change_on_the_manager_reaches_the_running_copy(
    multikueue_fleet: MultiKueueFleet, mk_namespace: str, classes: tuple[str, str]
) -> None:
    mk = multikueue_fleet
    low, high = classes
    with ClusterView.open(mk.fleet.manager, mk_namespace) as manager:
        job = kwok_job("bump", gpus_per_pod=0, pods=1, run_seconds=600)
        manager.create_job(job.queue(mk.spec.local_queue).priority_class(low).obj())
        cluster = until(partial(manager.placement, "bump"), "the job placed", timeout=60)
        name = (manager.workload_of_job("bump") or {})["metadata"]["name"]
        with ClusterView.open(mk.worker_by_cluster_name(cluster), mk_namespace) as worker:
            copy = until(lambda: worker.workload(name), "the remote copy", timeout=30)
            assert copy["spec"]["priority"] == 10
            manager.batch.patch_namespaced_job(
                "bump", mk_namespace, {"metadata": {"labels": {PRIORITY_LABEL: high}}}
            )
            bumped = until(
                lambda: (
                    (worker.workload(name) or {}).get("spec", {}).get("priority") == 1000
                    and worker.workload(name)
                ),
                "the copy's priority raised",
                timeout=60,
            )
            # Patched in place: the same copy, still admitted.
            assert bumped["metadata"]["uid"] == copy["metadata"]["uid"]
            assert (condition_of(bumped, "Admitted") or {}).get("status") == "True"


def _all_admitted(view: ClusterView) -> bool:
    workloads = view.workloads()
    return bool(workloads) and all(
        (condition_of(w, "Admitted") or {}).get("status") == "True" for w in workloads
    )

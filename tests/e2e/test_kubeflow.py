"""Kubeflow jobs end to end: the training operator's v1 family and MPIJob, real operators.

The fleet runs the Kubeflow training operator (PyTorchJob, TFJob, XGBoostJob, PaddleJob,
JAXJob) and the MPI Operator (MPIJob v2beta1) out of cluster on every cluster; their pods
run on kwok nodes. On a worker, a job queued to the agent's ClusterQueue is admitted,
started on the flavor's nodes (every replica type's template points there), finishes and
gives its quota back; a higher-priority job preempts it: it is suspended through
`runPolicy.suspend` with its templates restored, and runs again once that job is gone. On the
manager, every kind is suspended by the hub's webhook and handed to MultiKueue through
`runPolicy.managedBy`, placed whole on exactly one worker (a PyTorchJob only one worker has
room for goes there), run by that worker's operator, its status copied back, and the
worker's copies removed once it is Finished.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

from devfleet.multikueue_fleet import MultiKueueFleet
from tests.builders import (
    GPU,
    JAX,
    MPI,
    PADDLE,
    PYTORCH,
    TENSORFLOW,
    XGBOOST,
    KubeflowJob,
    KubeflowKind,
    kwok_kubeflow_job,
)
from tests.e2e.multikueue_fixtures import (
    ORIGIN_LABEL,
    ClusterView,
    condition_of,
    until,
    wait_gone,
)
from tests.e2e.priority_classes import workload_priority_classes

Json = dict[str, Any]
MANAGED_BY = "kueue.x-k8s.io/multikueue"
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
POOL_LABEL = "fleetq.dev/node-pool"
PLURALS = {
    "PyTorchJob": "pytorchjobs",
    "TFJob": "tfjobs",
    "XGBoostJob": "xgboostjobs",
    "PaddleJob": "paddlejobs",
    "JAXJob": "jaxjobs",
    "MPIJob": "mpijobs",
}


def _resource(kind: KubeflowKind) -> tuple[str, str, str]:
    group, version = kind.api_version.split("/")
    return group, version, PLURALS[kind.kind]


def _get(view: ClusterView, kind: KubeflowKind, name: str) -> Json | None:
    group, version, plural = _resource(kind)
    found: Json | None = view._maybe(
        lambda: view.custom.get_namespaced_custom_object(
            group, version, view.namespace, plural, name
        )
    )
    return found


def _create(view: ClusterView, kind: KubeflowKind, body: Json) -> None:
    group, version, plural = _resource(kind)
    view.custom.create_namespaced_custom_object(group, version, view.namespace, plural, body)


def _delete(view: ClusterView, kind: KubeflowKind, name: str) -> None:
    group, version, plural = _resource(kind)
    view.custom.delete_namespaced_custom_object(group, version, view.namespace, plural, name)


def _workload_of(view: ClusterView, kind: KubeflowKind, name: str) -> Json | None:
    for workload in view.workloads():
        owners = workload["metadata"].get("ownerReferences") or []
        if any(o.get("kind") == kind.kind and o.get("name") == name for o in owners):
            return workload
    return None


def _workload_is(view: ClusterView, kind: KubeflowKind, name: str, condition: str) -> Json | None:
    workload = _workload_of(view, kind, name)
    found = condition_of(workload, condition) or {}
    return workload if found.get("status") == "True" else None


def _suspend_is(view: ClusterView, kind: KubeflowKind, name: str, value: bool) -> Json | None:
    """The job when its runPolicy.suspend is `value`."""
    job = _get(view, kind, name)
    return job if job is not None and job["spec"]["runPolicy"].get("suspend") is value else None


def _placed(view: ClusterView, name: str, count: int) -> list[Any] | None:
    """The job's pods once `count` of them are on nodes."""
    pods = [p for p in _pods(view, name) if p.spec.node_name]
    return pods if len(pods) == count else None


def _explained(view: ClusterView, kind: KubeflowKind, *names: str) -> str:
    """The Workloads' conditions and the jobs' pods, for a failure message."""
    lines = []
    for name in names:
        workload = _workload_of(view, kind, name) or {}
        conditions = [
            (c.get("type"), c.get("status"), c.get("reason"), c.get("message"))
            for c in (workload.get("status") or {}).get("conditions") or ()
        ]
        pods = [(p.metadata.name, p.status.phase, p.spec.node_name) for p in _pods(view, name)]
        job = _get(view, kind, name) or {}
        run_policy = (job.get("spec") or {}).get("runPolicy")
        lines.append(
            f"{view.member.name} {kind.kind} {name}: runPolicy={run_policy}"
            f" workload conditions={conditions} pods={pods}"
            f" job conditions={(job.get('status') or {}).get('conditions')}"
        )
    return "\n".join(lines)


def _pods(view: ClusterView, name: str) -> list[Any]:
    selector = f"{JOB_NAME_LABEL}={name}"
    return list(view.core.list_namespaced_pod(view.namespace, label_selector=selector).items)


def _is_gpu_pod(pod: Any) -> bool:
    return any(
        GPU in ((c.resources and c.resources.limits) or {}) for c in pod.spec.containers or ()
    )


def _gpus_in_use(view: ClusterView, cluster_queue: str) -> int:
    """The GPUs the worker's ClusterQueue counts as used (status.flavorsUsage)."""
    queue = view.cluster_object("clusterqueues", cluster_queue) or {}
    total = 0
    for flavor in (queue.get("status") or {}).get("flavorsUsage") or ():
        for resource in flavor.get("resources") or ():
            if resource.get("name") == GPU:
                total += int(str(resource.get("total", "0")))
    return total


def _replica_templates(job: Any, kind: KubeflowKind) -> dict[str, Json]:
    specs = job["spec"][kind.replica_specs_field]
    return {replica_type: spec["template"] for replica_type, spec in specs.items()}


def _queued_locally(kind: KubeflowKind, name: str, queue: str, **shape: Any) -> KubeflowJob:
    """A job for a worker's own queue: created suspended (no fleetq webhook on workers)."""
    return kwok_kubeflow_job(kind, name, **shape).queue(queue).suspend()


FULLY = (PYTORCH, MPI)
"""The kinds tested through every step; both run at once in each test (quicker)."""


def test_jobs_queued_on_a_worker_run_on_the_flavors_gpu_nodes_and_free_their_quota(
    multikueue_fleet: MultiKueueFleet, mk_namespace: str
) -> None:
    mk = multikueue_fleet
    worker_member = mk.workers[0]  # worker-1: one GPU pool, so one flavor for every pod
    with ClusterView.open(worker_member, mk_namespace) as worker:
        before = _gpus_in_use(worker, mk.cluster_queue)
        for kind in FULLY:
            body = _queued_locally(
                kind,
                kind.container,
                mk.spec.local_queue,
                workers=2,
                gpus_per_worker=4,
                run_seconds=10,
            )
            _create(worker, kind, body.obj())
        for kind in FULLY:
            name, what = kind.container, kind.kind
            workload = until(
                partial(_workload_of, worker, kind, name), f"the {what}'s Workload", 30
            )
            pod_sets = [(p["name"], p["count"]) for p in workload["spec"]["podSets"]]
            assert pod_sets == [(kind.leader.lower(), 1), ("worker", 2)], what  # type: ignore[union-attr]
            until(partial(_workload_is, worker, kind, name, "Admitted"), f"{what} admitted", 60)
            started = until(
                partial(_suspend_is, worker, kind, name, False),
                f"the {what} unsuspended by the agent",
                30,
            )
            # Every replica type's template points at the admitted flavor's nodes.
            for template in _replica_templates(started, kind).values():
                assert template["spec"]["nodeSelector"].get(POOL_LABEL) == "gpu", what

            def gpu_pods_running(name: str = name) -> list[Any] | None:
                pods = [p for p in _pods(worker, name) if _is_gpu_pod(p)]
                placed = [p for p in pods if p.spec.node_name and p.status.phase == "Running"]
                return placed if len(placed) == 2 else None

            pods = until(gpu_pods_running, f"both GPU workers of the {what} running", 60)
            assert all(p.spec.node_name.startswith(f"{worker_member.name}-gpu-") for p in pods)
            until(
                lambda: _gpus_in_use(worker, mk.cluster_queue) >= before + 8,
                f"the {what}'s 8 GPUs counted as used by the worker's ClusterQueue",
                # The agent writes queue status at most once a second, behind its other
                # writes; 10 s was missed once on the loaded 2-core CI machine.
                30,
            )

        for kind in FULLY:
            name, what = kind.container, kind.kind
            done = until(
                partial(_workload_is, worker, kind, name, "Finished"), f"{what} Finished", 90
            )
            assert (condition_of(done, "Finished") or {}).get("reason") == "Succeeded", what
            job = _get(worker, kind, name) or {}
            assert (condition_of(job, "Succeeded") or {}).get("status") == "True", what
        until(
            lambda: _gpus_in_use(worker, mk.cluster_queue) == before,
            "the jobs' GPUs given back to the ClusterQueue",
            30,
        )


@contextlib.contextmanager
def _priority_classes(views: list[ClusterView], classes: dict[str, int]) -> Iterator[None]:
    with contextlib.ExitStack() as stack:
        for view in views:
            stack.enter_context(workload_priority_classes(view.custom, classes))
        yield


def test_preemption_suspends_a_job_restores_its_templates_and_it_runs_again(
    multikueue_fleet: MultiKueueFleet, mk_namespace: str
) -> None:
    mk = multikueue_fleet
    worker_1, worker_2 = mk.workers[0], mk.workers[-1]
    # Each kind fills one worker's GPUs with a low-priority victim (8-GPU workers: 4 on
    # worker-1's 32 GPUs, 2 on worker-2's 16); an 8-GPU high-priority job then preempts it.
    placement = {PYTORCH.kind: (worker_2, 2), MPI.kind: (worker_1, 4)}
    low, high = f"{mk_namespace}-low", f"{mk_namespace}-high"
    with (
        ClusterView.open(worker_1, mk_namespace) as on_1,
        ClusterView.open(worker_2, mk_namespace) as on_2,
        _priority_classes([on_1, on_2], {low: 10, high: 1000}),
    ):
        views = {worker_1.name: on_1, worker_2.name: on_2}
        submitted: dict[str, Json] = {}
        for kind in FULLY:
            member, victims = placement[kind.kind]
            victim = _queued_locally(
                kind,
                "victim",
                mk.spec.local_queue,
                workers=victims,
                gpus_per_worker=8,
                run_seconds=600,
            ).priority_class(low)
            _create(views[member.name], kind, victim.obj())
            submitted[kind.kind] = victim.obj()
        for kind in FULLY:
            member, victims = placement[kind.kind]
            worker = views[member.name]
            until(
                partial(_placed, worker, "victim", victims + 1),
                f"the {kind.kind} victim's pods placed",
                60,
            )
            # It runs until the test deletes it, so the victim waits suspended until then.
            urgent = _queued_locally(
                kind, "urgent", mk.spec.local_queue, workers=1, gpus_per_worker=8, run_seconds=600
            )
            _create(worker, kind, urgent.priority_class(high).obj())

        for kind in FULLY:
            member, _ = placement[kind.kind]
            worker, what = views[member.name], f"the {kind.kind} victim"

            def preempted(worker: ClusterView = worker, kind: KubeflowKind = kind) -> Json | None:
                workload = _workload_of(worker, kind, "victim") or {}
                evicted = condition_of(workload, "Evicted") or {}
                return workload if evicted.get("reason") == "Preempted" else None

            try:
                until(preempted, f"{what} preempted", 60)
            except AssertionError as failure:
                raise AssertionError(
                    f"{failure}\n{_explained(worker, kind, 'victim', 'urgent')}"
                ) from None
            stopped = until(
                partial(_suspend_is, worker, kind, "victim", True),
                f"{what} suspended through runPolicy.suspend",
                30,
            )
            # The admission's nodeSelector is taken back: the templates are as submitted.
            assert _replica_templates(stopped, kind) == _replica_templates(
                submitted[kind.kind], kind
            ), what

        # The urgent jobs gone, their quota is free again: each victim runs again.
        for kind in FULLY:
            member, _ = placement[kind.kind]
            _delete(views[member.name], kind, "urgent")
        for kind in FULLY:
            member, _ = placement[kind.kind]
            worker, what = views[member.name], f"the {kind.kind}"
            until(
                partial(_suspend_is, worker, kind, "victim", False),
                f"{what} victim admitted and started again",
                90,
            )


@dataclass(frozen=True, slots=True)
class Dispatched:
    kind: KubeflowKind
    name: str
    workers: int
    gpus_per_worker: int
    only_on: str | None = None
    """The fleet worker the whole job fits on alone, if only one."""

    @property
    def pod_sets(self) -> list[tuple[str, int]]:
        leader = [(self.kind.leader.lower(), 1)] if self.kind.leader else []
        return [*leader, ("worker", self.workers)]


DISPATCHED = (
    # 1 CPU master + 3 x 8 GPUs: 24 GPUs, which only worker-1 (32) has; worker-2 has 16.
    Dispatched(PYTORCH, "torch", workers=3, gpus_per_worker=8, only_on="worker-1"),
    Dispatched(MPI, "mpi", workers=2, gpus_per_worker=1),
    Dispatched(TENSORFLOW, "tf", workers=2, gpus_per_worker=1),
    Dispatched(XGBOOST, "xgb", workers=2, gpus_per_worker=1),
    Dispatched(PADDLE, "paddle", workers=2, gpus_per_worker=1),
    Dispatched(JAX, "jax", workers=2, gpus_per_worker=1),
)


def test_every_kind_submitted_on_the_manager_runs_on_one_worker_and_comes_back(
    multikueue_fleet: MultiKueueFleet, mk_namespace: str
) -> None:
    mk = multikueue_fleet
    placed: dict[str, tuple[Any, str]] = {}
    with ClusterView.open(mk.fleet.manager, mk_namespace) as manager:
        for job in DISPATCHED:
            body = kwok_kubeflow_job(
                job.kind,
                job.name,
                workers=job.workers,
                gpus_per_worker=job.gpus_per_worker,
                # Long enough that every job still runs (and its copy still exists on its
                # worker) while the checks below walk through all six on a loaded machine.
                run_seconds=40,
            )
            _create(manager, job.kind, body.queue(mk.spec.local_queue).obj())
            created = _get(manager, job.kind, job.name) or {}
            assert created["spec"]["runPolicy"]["suspend"] is True, job.kind.kind
            assert created["spec"]["runPolicy"]["managedBy"] == MANAGED_BY, job.kind.kind
            if job.only_on:
                # Placed before the others take GPUs, so its one fitting worker is free.
                until(
                    partial(_workload_is, manager, job.kind, job.name, "Admitted"),
                    f"{job.name} admitted on the manager",
                    60,
                )

        # While they run (40 s): one Workload each, on one worker, pods on its GPU nodes.
        for job in DISPATCHED:
            what = f"{job.kind.kind} {job.name}"
            workload = until(
                partial(_workload_is, manager, job.kind, job.name, "Admitted"),
                f"{what} admitted on the manager",
                60,
            )
            pod_sets = [(p["name"], p["count"]) for p in workload["spec"]["podSets"]]
            assert pod_sets == job.pod_sets, what
            chosen = mk.worker_by_cluster_name(workload["status"]["clusterName"])
            if job.only_on:
                assert chosen.name == job.only_on, f"{what} fits only {job.only_on}"
            assert not _pods(manager, job.name), f"nothing of {what} runs on the manager"
            placed[job.name] = (chosen, workload["metadata"]["name"])
            with ClusterView.open(chosen, mk_namespace) as worker:
                remote = until(partial(_get, worker, job.kind, job.name), f"remote {what}", 30)
                assert remote["metadata"]["labels"][ORIGIN_LABEL] == mk.origin
                assert not remote["spec"]["runPolicy"].get("managedBy")

                def gpu_pods_placed(job: Dispatched = job) -> list[Any] | None:
                    pods = [p for p in _pods(worker, job.name) if _is_gpu_pod(p)]
                    on_nodes = [p for p in pods if p.spec.node_name]
                    return on_nodes if len(on_nodes) == job.workers else None

                pods = until(gpu_pods_placed, f"{what}'s GPU workers placed", 60)
                assert all(p.spec.node_name.startswith(f"{chosen.name}-gpu-") for p in pods), what
            for other in mk.workers:
                if other.name != chosen.name:
                    with ClusterView.open(other, mk_namespace) as idle:
                        assert _get(idle, job.kind, job.name) is None, f"{what} copied twice"

        # Then: Finished on the manager, the worker's status back, the copies removed.
        for job in DISPATCHED:
            what = f"{job.kind.kind} {job.name}"
            chosen, name = placed[job.name]
            done = until(
                partial(_workload_is, manager, job.kind, job.name, "Finished"),
                f"{what} Finished on the manager",
                90,
            )
            assert (condition_of(done, "Finished") or {}).get("reason") == "Succeeded", what
            local = _get(manager, job.kind, job.name) or {}
            assert (condition_of(local, "Succeeded") or {}).get("status") == "True", (
                f"{what}: the worker's status copied back"
            )
            with ClusterView.open(chosen, mk_namespace) as worker:
                wait_gone(partial(worker.workload, name), f"{what}'s remote Workload removed", 60)
                wait_gone(
                    partial(_get, worker, job.kind, job.name), f"the remote {what} removed", 60
                )

"""JobSet end to end over MultiKueue, with the real JobSet controller on every cluster.

A user's JobSet (a CPU driver and GPU workers) is created unsuspended on the manager with
a LocalQueue label: the hub's webhook suspends it and hands it to MultiKueue, it queues as
one Workload with one pod set per replicated job, the capacity-aware dispatcher places it
on exactly one worker, the agent there admits it and unsuspends the copy, the worker's
JobSet controller creates the child Jobs whose pods run on kwok nodes of the admitted
flavor, the JobSet's status comes back to the manager, and once it is Finished the
worker's copies are removed.
"""

from __future__ import annotations

from typing import Any

from devfleet.multikueue_fleet import MultiKueueFleet
from tests.builders import kwok_jobset
from tests.e2e.multikueue_fixtures import (
    ORIGIN_LABEL,
    ClusterView,
    condition_of,
    until,
    wait_gone,
)

JOBSET = ("jobset.x-k8s.io", "v1alpha2", "jobsets")
MANAGED_BY = "kueue.x-k8s.io/multikueue"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"


def _jobset(view: ClusterView, name: str) -> dict[str, Any] | None:
    group, version, plural = JOBSET
    found: dict[str, Any] | None = view._maybe(
        lambda: view.custom.get_namespaced_custom_object(
            group, version, view.namespace, plural, name
        )
    )
    return found


def _create_jobset(view: ClusterView, body: dict[str, Any]) -> None:
    group, version, plural = JOBSET
    view.custom.create_namespaced_custom_object(group, version, view.namespace, plural, body)


def _workload_of(view: ClusterView, name: str) -> dict[str, Any] | None:
    for workload in view.workloads():
        owners = workload["metadata"].get("ownerReferences") or []
        if any(o.get("kind") == "JobSet" and o.get("name") == name for o in owners):
            return workload
    return None


def _pods(view: ClusterView, name: str) -> list[Any]:
    return list(
        view.core.list_namespaced_pod(
            view.namespace, label_selector=f"{JOBSET_NAME_LABEL}={name}"
        ).items
    )


def test_a_jobset_submitted_on_the_manager_runs_on_one_worker_and_finishes(
    multikueue_fleet: MultiKueueFleet, mk_namespace: str
) -> None:
    mk = multikueue_fleet
    body = kwok_jobset("llm", workers=3, gpus_per_worker=4, run_seconds=3)
    body = body.queue(mk.spec.local_queue).obj()
    with ClusterView.open(mk.fleet.manager, mk_namespace) as manager:
        _create_jobset(manager, body)
        created = _jobset(manager, "llm") or {}
        assert created["spec"]["suspend"] is True, "the hub's webhook suspends it on create"
        assert created["spec"]["managedBy"] == MANAGED_BY

        # One Workload, one pod set per replicated job, in spec order.
        workload = until(lambda: _workload_of(manager, "llm"), "the JobSet's Workload", 30)
        pod_sets = [(p["name"], p["count"]) for p in workload["spec"]["podSets"]]
        assert pod_sets == [("driver", 1), ("workers", 3)]

        def admitted() -> dict[str, Any] | None:
            found = _workload_of(manager, "llm")
            ok = condition_of(found, "Admitted") or {}
            return found if ok.get("status") == "True" else None

        workload = until(admitted, "the manager Workload admitted", timeout=60)
        cluster = workload["status"]["clusterName"]
        name = workload["metadata"]["name"]
        chosen = mk.worker_by_cluster_name(cluster)
        others = [w for w in mk.workers if w.name != chosen.name]
        assert not _pods(manager, "llm"), "nothing runs on the manager"

        with ClusterView.open(chosen, mk_namespace) as worker:
            remote = until(lambda: _jobset(worker, "llm"), "the remote JobSet", timeout=30)
            assert remote["metadata"]["labels"][ORIGIN_LABEL] == mk.origin
            assert not remote["spec"].get("managedBy")

            def pods_placed() -> list[Any] | None:
                pods = _pods(worker, "llm")
                return pods if len(pods) == 4 and all(p.spec.node_name for p in pods) else None

            pods = until(pods_placed, "driver and three workers scheduled", timeout=90)
            gpu_pods = [
                p
                for p in pods
                if p.metadata.labels.get("jobset.sigs.k8s.io/replicatedjob-name") == "workers"
            ]
            assert len(gpu_pods) == 3
            assert all(p.spec.node_name.startswith(f"{chosen.name}-gpu-") for p in gpu_pods)
            for other in others:
                with ClusterView.open(other, mk_namespace) as idle:
                    assert _jobset(idle, "llm") is None and idle.workload(name) is None

            def finished() -> dict[str, Any] | None:
                found = manager.workload(name)
                done = condition_of(found, "Finished") or {}
                return found if done.get("status") == "True" else None

            done = until(finished, "the manager Workload Finished", timeout=120)
            assert (condition_of(done, "Finished") or {}).get("reason") == "Succeeded"
            local = _jobset(manager, "llm") or {}
            assert (condition_of(local, "Completed") or {}).get("status") == "True"

            wait_gone(lambda: worker.workload(name), "the remote Workload removed", timeout=60)
            wait_gone(lambda: _jobset(worker, "llm"), "the remote JobSet removed", timeout=60)

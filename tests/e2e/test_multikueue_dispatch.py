"""MultiKueue end to end: a user's Job on the manager runs on a worker and finishes there.

The shared MultiKueue fleet (hub on the API-only manager, agents on both full workers)
takes an ordinary, unsuspended Job labelled with a LocalQueue: the hub's webhook suspends
it and hands it to MultiKueue (managedBy), the hub admits it against the manager's quota,
the capacity-aware dispatcher places one copy on a worker, the agent there admits it, its
pods run on kwok GPU nodes, and the Job's status comes back to the manager until the
manager Workload is Finished and the worker's copies are gone.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from devfleet.multikueue_fleet import MultiKueueFleet
from tests.e2e.multikueue_fixtures import (
    FLEETQ,
    ORIGIN_LABEL,
    ClusterView,
    RemoteWatch,
    condition_of,
    queued_job,
    until,
    wait_gone,
)

MANAGED_BY = "kueue.x-k8s.io/multikueue"
POOL_LABEL = "fleetq.dev/node-pool"
GPU = "nvidia.com/gpu"


def check_state(workload: dict[str, Any] | None, check: str) -> str | None:
    for entry in ((workload or {}).get("status") or {}).get("admissionChecks") or ():
        if entry.get("name") == check:
            return str(entry.get("state"))
    return None


def test_a_job_submitted_on_the_manager_runs_on_a_worker_and_finishes(
    multikueue_fleet: MultiKueueFleet, mk_namespace: str
) -> None:
    mk = multikueue_fleet
    job = queued_job("train", mk.spec.local_queue, gpus_per_pod=4, pods=2, run_seconds=3)
    with ClusterView.open(mk.fleet.manager, mk_namespace) as manager:
        manager.create_job(job)

        # The webhook suspended it at create time and gave it to MultiKueue.
        created = manager.job("train")
        assert created is not None
        assert created["spec"]["suspend"] is True
        assert created["spec"]["managedBy"] == MANAGED_BY

        # Admitted on the manager, with the MultiKueue check Ready and one worker chosen.
        def admitted() -> dict[str, Any] | None:
            workload = manager.workload_of_job("train")
            ok = condition_of(workload, "Admitted") or {}
            return workload if ok.get("status") == "True" else None

        workload = until(admitted, "the manager Workload admitted", timeout=60)
        assert check_state(workload, mk.admission_check) == "Ready"
        cluster = workload["status"]["clusterName"]
        assert cluster in mk.cluster_names.values()
        assert not workload["status"].get("nominatedClusterNames")
        name = workload["metadata"]["name"]

        # Only the chosen worker has a copy; its pods run on its GPU nodes.
        chosen = mk.worker_by_cluster_name(cluster)
        others = [w for w in mk.workers if w.name != chosen.name]
        with ClusterView.open(chosen, mk_namespace) as worker:
            remote = until(lambda: worker.job("train"), "the remote Job", timeout=30)
            assert remote["metadata"]["labels"][ORIGIN_LABEL] == mk.origin
            assert not remote["spec"].get("managedBy")

            def pods_placed() -> list[Any] | None:
                pods = worker.pods("train")
                return pods if len(pods) == 2 and all(p.spec.node_name for p in pods) else None

            pods = until(pods_placed, "two pods scheduled on the worker", timeout=60)
            assert all(p.spec.node_name.startswith(f"{chosen.name}-gpu-") for p in pods)
            for other in others:
                with ClusterView.open(other, mk_namespace) as idle:
                    assert idle.job("train") is None and idle.workload(name) is None

            # The status flows back and the manager Workload finishes.
            def finished() -> dict[str, Any] | None:
                found = manager.workload(name)
                done = condition_of(found, "Finished") or {}
                return found if done.get("status") == "True" else None

            until(finished, "the manager Workload Finished", timeout=90)
            local = manager.job("train") or {}
            assert (local.get("status") or {}).get("succeeded") == 2
            assert (condition_of(local, "Complete") or {}).get("status") == "True"

            # The worker's copies are removed.
            wait_gone(lambda: worker.workload(name), "the remote Workload removed", timeout=60)
            wait_gone(lambda: worker.job("train"), "the remote Job removed", timeout=60)


def test_the_fleet_reports_its_workers_and_the_check_active(
    multikueue_fleet: MultiKueueFleet,
) -> None:
    mk = multikueue_fleet
    with ClusterView.open(mk.fleet.manager, "default") as manager:
        for name in mk.cluster_names.values():
            active = condition_of(manager.cluster_object("multikueueclusters", name), "Active")
            assert active is not None
            assert (active["status"], active["reason"]) == ("True", "Active")
        check = condition_of(
            manager.cluster_object("admissionchecks", mk.admission_check), "Active"
        )
        assert check is not None and check["status"] == "True"
        queue = condition_of(manager.cluster_object("clusterqueues", mk.cluster_queue), "Active")
        assert queue is not None and queue["status"] == "True"


def _blocker(name: str, pods: int) -> dict[str, Any]:
    """`pods` pods of one GPU each, one per node: no node keeps 8 GPUs free."""
    job = queued_job(name, None, gpus_per_pod=1, pods=pods, run_seconds=600)
    template = job["spec"]["template"]
    template["metadata"]["labels"] = {"blocker": name}
    template["spec"]["nodeSelector"] = {POOL_LABEL: "gpu"}
    template["spec"]["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"blocker": name}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    return job


def _largest_free_gpus(worker: ClusterView, report: str) -> int:
    found = worker.cluster_object("workercapacities", report, FLEETQ) or {}
    sizes = [
        int(block.get(GPU, "0"))
        for flavor in (found.get("status") or {}).get("flavors") or ()
        for block in flavor.get("largestFreeBlocks") or ()
    ]
    return max(sizes, default=0)


def test_capacity_aware_dispatch_places_each_job_where_it_fits(
    multikueue_fleet: MultiKueueFleet, mk_namespace: str
) -> None:
    """worker-1 comes first in the config but has no free 8-GPU node and no CPU pool."""
    mk = multikueue_fleet
    first, second = mk.workers
    queue = mk.spec.local_queue
    with (
        ClusterView.open(first, mk_namespace) as crowded,
        ClusterView.open(mk.fleet.manager, mk_namespace) as manager,
        RemoteWatch(mk.workers, mk_namespace) as remote,
    ):
        crowded.create_job(_blocker("blocker", 4))  # not queued: the agent leaves it alone
        until(
            lambda: sum(1 for p in crowded.pods("blocker") if p.status.phase == "Running") == 4,
            "the blocker's 4 pods running on worker-1",
            timeout=60,
        )
        report = mk.cluster_names[first.name]
        until(
            lambda: _largest_free_gpus(crowded, report) == 7,
            "worker-1's report: at most 7 GPUs free on any node",
            timeout=30,
        )

        manager.create_job(queued_job("big", queue, gpus_per_pod=8, pods=1, run_seconds=2))
        cpu = queued_job(
            "cpu", queue, gpus_per_pod=0, pods=2, run_seconds=2, node_selector={POOL_LABEL: "cpu"}
        )
        manager.create_job(cpu)
        for job, pool in (("big", "gpu"), ("cpu", "cpu")):
            workload = until(partial(manager.placement, job), f"{job} placed", timeout=60)
            assert workload == mk.cluster_names[second.name], f"{job} went to {workload}"
            with ClusterView.open(second, mk_namespace) as chosen:
                pods = until(
                    partial(chosen.scheduled_pods, job), f"{job}'s pods on worker-2", timeout=60
                )
                assert all(p.spec.node_name.startswith(f"{second.name}-{pool}-") for p in pods)
        for job in ("big", "cpu"):
            until(partial(manager.job_workload_is, job, "Finished"), f"{job} Finished", 60)
            name = (manager.workload_of_job(job) or {})["metadata"]["name"]
            # One copy, on worker-2 only: worker-1 was never tried.
            assert {cluster for cluster, _ in remote.copies(name)} == {second.name}
            assert len(remote.copies(name)) == 1
        crowded.batch.delete_namespaced_job(
            "blocker", mk_namespace, propagation_policy="Background"
        )

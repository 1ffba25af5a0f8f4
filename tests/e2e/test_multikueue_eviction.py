"""MultiKueue when the manager takes admission back, and when a worker is shared.

- Deactivating a running Workload on the manager evicts it there: the worker's copy is
  stopped and removed, the manager's Job is suspended again and the manager's quota is
  released — without waiting on the `active` count copied from the worker, which nothing
  resets once the copy is gone.
- A worker's own Job that happens to share a name with a dispatched one is never touched.
- A worker runs local Jobs (its own queue, no MultiKueue) next to dispatched ones.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any

from devfleet.multikueue_fleet import MultiKueueFleet
from tests.e2e.multikueue_fixtures import (
    ORIGIN_LABEL,
    ClusterView,
    condition_of,
    queued_job,
    until,
    wait_gone,
)


def _is(obj: dict[str, Any] | None, condition: str, status: str = "True") -> bool:
    return (condition_of(obj, condition) or {}).get("status") == status


def test_evicting_on_the_manager_stops_the_remote_copy_and_releases_the_quota(
    multikueue_fleet: MultiKueueFleet, mk_namespace: str
) -> None:
    mk = multikueue_fleet
    job = queued_job("long", mk.spec.local_queue, gpus_per_pod=1, pods=1, run_seconds=600)
    with ClusterView.open(mk.fleet.manager, mk_namespace) as manager:
        manager.create_job(job)
        cluster = until(partial(manager.placement, "long"), "the job placed", timeout=60)
        worker_access = mk.worker_by_cluster_name(cluster)
        with ClusterView.open(worker_access, mk_namespace) as worker:
            until(
                lambda: any(p.status.phase == "Running" for p in worker.pods("long")),
                "the pod running on the worker",
                timeout=60,
            )
            # The worker's active count has been copied to the manager's Job.
            until(
                lambda: ((manager.job("long") or {}).get("status") or {}).get("active") == 1,
                "status.active copied to the manager's Job",
                timeout=30,
            )
            workload = manager.workload_of_job("long")
            assert workload is not None
            name = workload["metadata"]["name"]
            manager.custom.patch_namespaced_custom_object(
                "kueue.x-k8s.io",
                "v1beta2",
                mk_namespace,
                "workloads",
                name,
                {"spec": {"active": False}},
            )

            def released() -> dict[str, Any] | None:
                found = manager.workload(name)
                done = _is(found, "Evicted") and _is(found, "QuotaReserved", "False")
                placed = ((found or {}).get("status") or {}).get("clusterName")
                return found if done and not placed else None

            evicted = until(released, "the manager Workload evicted, quota released", 60)
            assert condition_of(evicted, "Evicted")["reason"] == "Deactivated"  # type: ignore[index]
            local = manager.job("long") or {}
            assert local["spec"]["suspend"] is True
            # The copy is stopped and removed; its pods go.
            wait_gone(lambda: worker.workload(name), "the remote Workload removed", 60)
            wait_gone(lambda: worker.job("long"), "the remote Job removed", 60)
            wait_gone(
                lambda: [p for p in worker.pods("long") if p.status.phase == "Running"],
                "the remote pods stopped",
                60,
            )
            # Deactivated, it stays out: no new copy anywhere.
            time.sleep(2)
            for member in mk.workers:
                with ClusterView.open(member, mk_namespace) as view:
                    assert view.workload(name) is None


def test_a_workers_own_job_of_the_same_name_is_never_touched(
    multikueue_fleet: MultiKueueFleet, mk_namespace: str
) -> None:
    mk = multikueue_fleet
    own_uids = {}
    for member in mk.workers:
        with ClusterView.open(member, mk_namespace) as view:
            # Not queued, suspended: nobody runs it, it simply exists.
            own = queued_job("same", None, gpus_per_pod=0, pods=1, run_seconds=1)
            own["spec"]["suspend"] = True
            view.create_job(own)
            own_uids[member.name] = (view.job("same") or {})["metadata"]["uid"]
    with ClusterView.open(mk.fleet.manager, mk_namespace) as manager:
        manager.create_job(
            queued_job("same", mk.spec.local_queue, gpus_per_pod=0, pods=1, run_seconds=1)
        )
        until(lambda: manager.workload_of_job("same"), "the manager Workload", timeout=30)
        time.sleep(8)  # dispatch has had every chance to act on the workers
        for member in mk.workers:
            with ClusterView.open(member, mk_namespace) as view:
                found = view.job("same")
                assert found is not None, f"the worker's own job on {member.name} was deleted"
                assert found["metadata"]["uid"] == own_uids[member.name]
                assert ORIGIN_LABEL not in (found["metadata"].get("labels") or {})
                assert found["spec"]["suspend"] is True
        # The manager's Job never ran anywhere.
        assert not _is(manager.workload_of_job("same"), "Finished")


def test_a_worker_runs_its_own_queued_jobs_next_to_dispatched_ones(
    multikueue_fleet: MultiKueueFleet, mk_namespace: str
) -> None:
    mk = multikueue_fleet
    shared = mk.workers[-1]
    with (
        ClusterView.open(shared, mk_namespace) as worker,
        ClusterView.open(mk.fleet.manager, mk_namespace) as manager,
    ):
        local = queued_job("local", mk.spec.local_queue, gpus_per_pod=0, pods=1, run_seconds=2)
        local["spec"]["suspend"] = True  # no webhook on the worker: created suspended
        worker.create_job(local)
        manager.create_job(
            queued_job("remote", mk.spec.local_queue, gpus_per_pod=0, pods=1, run_seconds=2)
        )
        until(partial(worker.job_workload_is, "local", "Finished"), "the local job done", 90)
        until(partial(manager.job_workload_is, "remote", "Finished"), "the remote job done", 90)
        # The worker's own Workload is its own: no origin label, never seen by the manager.
        own = worker.workload_of_job("local") or {}
        assert ORIGIN_LABEL not in (own["metadata"].get("labels") or {})
        assert manager.job("local") is None

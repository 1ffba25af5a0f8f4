"""Upstream's Incremental and External dispatchers run jobs too (the hub restarted for each).

- Incremental (stepSize 1, 5 s rounds): a job only worker-2 can run (CPU nodes) is first
  offered to worker-1 alone, then, a round later, to worker-2 as well, which admits it;
  worker-1's copy is removed and the job finishes on worker-2.
- External: the hub nominates nobody; the test plays the external dispatcher by writing
  `status.nominatedClusterNames`, and the job runs where it was told.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest

from devfleet.multikueue_fleet import MultiKueueFleet
from tests.e2e.multikueue_fixtures import (
    ClusterView,
    RemoteWatch,
    condition_of,
    queued_job,
    until,
)

POOL_LABEL = "fleetq.dev/node-pool"
INCREMENTAL = "kueue.x-k8s.io/multikueue-dispatcher-incremental"
EXTERNAL = "example.com/e2e-dispatcher"


@pytest.fixture
def restarted_hub(multikueue_fleet: MultiKueueFleet) -> Iterator[MultiKueueFleet]:
    """The shared fleet; whatever hub Configuration a test sets is undone after it."""
    yield multikueue_fleet
    multikueue_fleet.restart_hub({})


def _reserved(manager: ClusterView, job: str) -> dict[str, Any] | None:
    workload = manager.workload_of_job(job)
    reserved = (condition_of(workload, "QuotaReserved") or {}).get("status") == "True"
    return workload if reserved else None


def test_the_incremental_dispatcher_widens_the_nomination_round_by_round(
    restarted_hub: MultiKueueFleet, mk_namespace: str
) -> None:
    mk = restarted_hub
    mk.restart_hub(
        {
            "multiKueue": {
                "dispatcherName": INCREMENTAL,
                "incrementalDispatcherConfig": {"stepSize": 1, "roundTimeout": "5s"},
            }
        }
    )
    second = mk.cluster_names[mk.workers[1].name]
    job = queued_job(
        "cpu",
        mk.spec.local_queue,
        gpus_per_pod=0,
        pods=1,
        run_seconds=2,
        node_selector={POOL_LABEL: "cpu"},
    )
    with (
        RemoteWatch(mk.workers, mk_namespace) as remote,
        ClusterView.open(mk.fleet.manager, mk_namespace) as manager,
    ):
        manager.create_job(job)
        until(partial(manager.job_workload_is, "cpu", "Finished"), "the job finished", 120)
        workload = manager.workload_of_job("cpu") or {}
        name = workload["metadata"]["name"]
        assert {cluster for cluster, _ in remote.copies(name)} == {w.name for w in mk.workers}
        assert {cluster for cluster, _ in remote.admitted_copies(name)} == {mk.workers[1].name}
        assert (workload.get("status") or {}).get("clusterName") == second


def test_an_external_dispatcher_decides_where_the_job_runs(
    restarted_hub: MultiKueueFleet, mk_namespace: str
) -> None:
    mk = restarted_hub
    mk.restart_hub({"multiKueue": {"dispatcherName": EXTERNAL}})
    target = mk.workers[1]
    with (
        RemoteWatch(mk.workers, mk_namespace) as remote,
        ClusterView.open(mk.fleet.manager, mk_namespace) as manager,
    ):
        manager.create_job(
            queued_job("told", mk.spec.local_queue, gpus_per_pod=0, pods=1, run_seconds=2)
        )
        workload = until(partial(_reserved, manager, "told"), "quota reserved", timeout=60)
        name = workload["metadata"]["name"]
        assert not remote.copies(name), "the hub nominated by itself"
        manager.custom.patch_namespaced_custom_object_status(
            "kueue.x-k8s.io",
            "v1beta2",
            mk_namespace,
            "workloads",
            name,
            {"status": {"nominatedClusterNames": [mk.cluster_names[target.name]]}},
        )
        until(partial(manager.job_workload_is, "told", "Finished"), "the job finished", 120)
        assert {cluster for cluster, _ in remote.copies(name)} == {target.name}

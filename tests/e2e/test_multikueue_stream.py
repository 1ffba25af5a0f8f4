"""A stream of 200 Jobs through MultiKueue: every one completes, each admitted remotely once.

Short, small Jobs (one pod, one CPU, one second) are submitted on the manager from a few
threads at once. A watch on both workers records every remote Workload ever created, so
the test can tell that each manager Workload had exactly one copy, admitted once, on one
worker: the capacity-aware dispatcher never raced copies, even under a burst.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from devfleet.multikueue_fleet import MultiKueueFleet
from tests.builders import kwok_job
from tests.e2e.multikueue_fixtures import (
    ClusterView,
    RemoteWatch,
    condition_of,
    metric_value,
    until,
)

JOBS = 200


def _short_job(index: int, queue: str) -> dict[str, Any]:
    job = kwok_job(f"stream-{index:03d}", gpus_per_pod=0, pods=1, run_seconds=1)
    return job.queue(queue).obj()


def test_a_stream_of_jobs_completes_with_one_remote_admission_each(
    multikueue_fleet: MultiKueueFleet, mk_namespace: str
) -> None:
    mk = multikueue_fleet
    dispatched_before = metric_value(mk.hub_metrics_port, "multikueue_workloads_dispatched_total")
    with (
        RemoteWatch(mk.workers, mk_namespace) as remote,
        ClusterView.open(mk.fleet.manager, mk_namespace) as manager,
    ):
        started = time.monotonic()

        def submit(index: int) -> None:
            with ClusterView.open(mk.fleet.manager, mk_namespace) as view:
                view.create_job(_short_job(index, mk.spec.local_queue))

        with ThreadPoolExecutor(max_workers=6) as pool:
            list(pool.map(submit, range(JOBS)))
        submitted = time.monotonic() - started

        def finished() -> list[dict[str, Any]] | None:
            workloads = manager.workloads()
            done = [
                w for w in workloads if (condition_of(w, "Finished") or {}).get("status") == "True"
            ]
            return workloads if len(done) == JOBS else None

        workloads = until(finished, f"all {JOBS} manager Workloads Finished", timeout=420)
        elapsed = time.monotonic() - started
        print(f"{JOBS} jobs: submitted in {submitted:.1f}s, all finished after {elapsed:.1f}s")

        jobs = manager.jobs()
        assert len(jobs) == JOBS
        # Each Job's final status was copied from its worker before its Workload finished.
        assert all((job.get("status") or {}).get("succeeded") == 1 for job in jobs)
        assert all(
            (condition_of(w, "Finished") or {}).get("reason") == "Succeeded" for w in workloads
        )
        per_workload = {
            w["metadata"]["name"]: (
                remote.copies(w["metadata"]["name"]),
                remote.admitted_copies(w["metadata"]["name"]),
            )
            for w in workloads
        }
        more_than_one = {
            name: sorted(copies) for name, (copies, _) in per_workload.items() if len(copies) != 1
        }
        assert not more_than_one, f"Workloads with other than one remote copy: {more_than_one}"
        not_admitted_once = [
            name for name, (_, admitted) in per_workload.items() if len(admitted) != 1
        ]
        assert not not_admitted_once
        placed_on = {cluster for copies, _ in per_workload.values() for cluster, _ in copies}
        print(f"placed on: {sorted(placed_on)}")
    dispatched = (
        metric_value(mk.hub_metrics_port, "multikueue_workloads_dispatched_total")
        - dispatched_before
    )
    assert dispatched == JOBS

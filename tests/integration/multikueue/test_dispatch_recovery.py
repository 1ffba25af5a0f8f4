"""MultiKueue recovery on real apiservers: the scenarios of upstream's suite where something
changes under a dispatched workload — a copy finishing out of sync, a worker joining the
config, a worker away while the manager's job is deleted or finishes, a hub restarted
while the admitting worker is unreachable. Driven through `dispatch_harness.Fleet`."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from core.kube.resources import JOBS
from tests.integration.multikueue.dispatch_harness import (
    ALL_AT_ONCE,
    CONFIGS,
    WORKLOADS,
    Fleet,
    admitted_on_one,
    condition,
    conditions_of,
    eventually,
)

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_a_copy_finished_out_of_sync_is_retried_not_finished(mk: Fleet) -> None:
    await mk.start(ALL_AT_ONCE)
    name = await mk.submit("unsynced")
    await mk.wait_remote(1, name)
    await admitted_on_one(mk, name, 0)
    first = await mk.wait_remote(0, name)
    await mk.wait_remote(0, "unsynced", JOBS)

    # The worker's job reconciler found its prebuilt Workload and Job disagreeing.
    await mk.workers[0].patch(
        WORKLOADS,
        name,
        {
            "status": {
                "conditions": [
                    condition("QuotaReserved"),
                    condition("Admitted"),
                    condition(
                        "Finished",
                        reason="OutOfSync",
                        message="The prebuilt workload is out of sync with its user job",
                    ),
                ]
            }
        },
        namespace=mk.ns,
        subresource="status",
    )
    local = await mk.wait_check(name, "Retry")
    assert mk.check_state(local)["message"] == (
        f'The remote workload finished out of sync on "{mk.clusters[0]}":'
        " The prebuilt workload is out of sync with its user job"
    )
    assert "Finished" not in conditions_of(local)
    await mk.wait_gone(0, name)
    await mk.wait_gone(0, "unsynced", JOBS)

    # The retry dispatches afresh: new copies, which can be admitted and run.
    await mk.release_for_retry(name)
    await mk.wait_placement_forgotten(name)
    await mk.reserve_again(name)
    again = await mk.wait_remote(0, name)
    assert again["metadata"]["uid"] != first["metadata"]["uid"]
    await mk.wait_remote(1, name)
    local = await admitted_on_one(mk, name, 1)
    assert local["status"]["clusterName"] == mk.clusters[1]
    assert "Finished" not in conditions_of(local)


async def test_a_worker_added_to_the_config_gets_a_copy_of_a_waiting_workload(
    mk: Fleet,
) -> None:
    await mk.start(ALL_AT_ONCE, config_clusters=(0,))
    name = await mk.submit("widened")
    await mk.wait_remote(0, name)
    assert (await mk.local(name))["status"]["nominatedClusterNames"] == [mk.clusters[0]]
    await asyncio.sleep(1.0)  # a copy on the worker outside the config would be here by now
    assert await mk.remote(1, name) is None

    await mk.manager.patch(CONFIGS, mk.check, {"spec": {"clusters": mk.clusters}})
    await mk.wait_remote(1, name)

    async def both_nominated() -> bool:
        status = (await mk.local(name))["status"]
        return sorted(status.get("nominatedClusterNames") or ()) == sorted(mk.clusters)

    await eventually(both_nominated, what="both workers nominated")
    local = await admitted_on_one(mk, name, 1)
    assert local["status"]["clusterName"] == mk.clusters[1]
    await mk.wait_gone(0, name)


async def test_copies_of_a_job_deleted_while_its_worker_was_away_go_when_it_returns(
    mk: Fleet,
) -> None:
    # Collection is on but its period is far off: the worker's return triggers a pass.
    await mk.start(ALL_AT_ONCE, gc_interval=600.0)
    name = await mk.submit("abandoned")
    await mk.wait_remote(1, name)
    await admitted_on_one(mk, name, 0)
    await mk.wait_remote(0, "abandoned", JOBS)

    await mk.cut_off(0)
    # The user deletes the Job; the lite manager runs no garbage collector, so the test
    # removes its Workload as the manager's would.
    await mk.manager.delete(JOBS, "abandoned", namespace=mk.ns)
    await mk.manager.delete(WORKLOADS, name, namespace=mk.ns)
    await asyncio.sleep(2.0)  # reconcile passes while the worker is away
    assert await mk.remote(0, name) is not None  # nobody could reach it
    assert await mk.remote(0, "abandoned", JOBS) is not None

    await mk.reconnect(0)
    await mk.wait_gone(0, name)
    await mk.wait_gone(0, "abandoned", JOBS)


async def test_a_copy_left_on_a_worker_away_when_the_job_finished_goes_when_it_returns(
    mk: Fleet,
) -> None:
    # No garbage collection: the reconnection alone must bring the leftover to light.
    await mk.start(ALL_AT_ONCE, gc_interval=0)
    name = await mk.submit("finished")
    loser = await mk.wait_remote(1, name)
    await mk.wait_remote(0, name)
    await mk.cut_off(1)
    await admitted_on_one(mk, name, 0)
    await mk.wait_remote(0, "finished", JOBS)

    # The manager's Job controller starts the local Job; the job runs and ends on worker 1.
    await mk.manager.patch(JOBS, "finished", {"spec": {"suspend": False}}, namespace=mk.ns)
    await mk.finish_on(0, "finished", name)

    async def finished() -> dict[str, Any] | None:
        return conditions_of(await mk.local(name)).get("Finished")

    done = await eventually(finished, what="the manager Workload finished")
    assert done["reason"] == "Succeeded"
    await mk.wait_gone(0, name)
    left = await mk.remote(1, name)
    assert left is not None and left["metadata"]["uid"] == loser["metadata"]["uid"]

    await mk.reconnect(1)
    await mk.wait_gone(1, name)


async def test_a_restarted_hub_retries_a_workload_whose_admitting_worker_stays_away(
    mk: Fleet,
) -> None:
    await mk.start(ALL_AT_ONCE, worker_lost_timeout=3.0)
    name = await mk.submit("stranded")
    await mk.wait_remote(1, name)
    await admitted_on_one(mk, name, 0)

    await mk.cut_off(0)
    await mk.restart_hub()  # well within the timeout: the new hub knows nothing of the outage
    restarted = time.monotonic()
    await mk.wait_connected(1)
    assert not mk.connected(0)
    local = await mk.wait_check(name, "Retry", timeout=30.0)
    assert time.monotonic() - restarted >= 2.5  # the new hub waited out the timeout itself
    assert mk.check_state(local)["message"] == "Admitting remote lost"
    assert local["status"]["clusterName"] == mk.clusters[0]

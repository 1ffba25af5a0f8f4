"""MultiKueue dispatch on real apiservers: the lite fleet's manager and its two workers,
driven through `dispatch_harness.Fleet` (the hub's dispatch in-process, the test playing
the manager's engine and the workers' Kueue)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from core.kube.resources import JOBS
from tests.builders import Job, Workload
from tests.integration.multikueue.dispatch_harness import (
    ALL_AT_ONCE,
    CAPACITY_AWARE,
    ORIGIN_LABEL,
    POD_TEMPLATE,
    PREBUILT_LABEL,
    WORKLOADS,
    Fleet,
    admitted_on_one,
    closed_port,
    condition,
    conditions_of,
    eventually,
)

pytestmark = pytest.mark.asyncio(loop_scope="session")

# -- tests ---------------------------------------------------------------------------------


async def test_all_at_once_copies_everywhere_and_the_first_admission_wins(mk: Fleet) -> None:
    await mk.start(ALL_AT_ONCE)
    name = await mk.submit("race")
    copies = [await mk.wait_remote(0, name), await mk.wait_remote(1, name)]
    local = await mk.local(name)
    for copy in copies:
        assert copy["metadata"]["labels"][ORIGIN_LABEL] == mk.origin
        assert not copy["metadata"].get("ownerReferences")
        assert copy["spec"]["podSets"] == local["spec"]["podSets"]
        assert not (copy.get("status") or {}).get("conditions")
    assert sorted(local["status"]["nominatedClusterNames"]) == sorted(mk.clusters)

    await mk.admit_on(1, name)
    local = await mk.wait_check(name, "Ready")
    check = mk.check_state(local)
    assert check["message"] == f'The workload was admitted on "{mk.clusters[1]}"'
    assert local["status"]["clusterName"] == mk.clusters[1]
    assert not local["status"].get("nominatedClusterNames")
    await mk.wait_gone(0, name)

    remote_job = await mk.wait_remote(1, "race", JOBS)
    labels = remote_job["metadata"]["labels"]
    assert (labels[ORIGIN_LABEL], labels[PREBUILT_LABEL]) == (mk.origin, name)
    assert remote_job["spec"]["suspend"] is True and not remote_job["spec"].get("managedBy")
    assert await mk.remote(0, "race", JOBS) is None
    exposition = mk.metrics.get_sample_value(
        "multikueue_workloads_admitted_total",
        {"cluster_queue": f"cq-{mk.suffix}", "cluster": mk.clusters[1], "replica_role": "leader"},
    )
    assert exposition == 1.0
    latencies = mk.metrics.get_sample_value(
        "fleetq_multikueue_dispatch_latency_seconds_count",
        {"cluster": mk.clusters[1], "replica_role": "leader"},
    )
    assert latencies == 1.0


async def test_capacity_aware_sends_one_copy_to_the_worker_whose_report_fits(mk: Fleet) -> None:
    await mk.report_capacity(0, free_gpus=2)
    await mk.report_capacity(1, free_gpus=8)
    await mk.start(CAPACITY_AWARE)
    name = await mk.submit("gpu", gpus=4)
    await mk.wait_remote(1, name)
    local = await mk.local(name)
    assert local["status"]["nominatedClusterNames"] == [mk.clusters[1]]
    await asyncio.sleep(1.0)  # a copy on the other worker would have arrived by now
    assert await mk.remote(0, name) is None

    await mk.admit_on(1, name)
    local = await mk.wait_check(name, "Ready")
    assert local["status"]["clusterName"] == mk.clusters[1]
    writes = mk.metrics.get_sample_value(
        "fleetq_multikueue_remote_writes_per_dispatch_sum", {"replica_role": "leader"}
    )
    assert writes == 2.0  # one copy created, one job created: nothing raced, nothing removed


async def test_capacity_aware_spreads_jobs_the_reports_do_not_show_yet(mk: Fleet) -> None:
    # Both workers report 8 free GPUs and never report again: only the hub's own claims
    # tell it that the first job took a quarter of worker 1.
    await mk.report_capacity(0, free_gpus=8)
    await mk.report_capacity(1, free_gpus=8)
    await mk.start(CAPACITY_AWARE)
    first = await mk.submit("spread-a", gpus=2)
    await mk.wait_remote(0, first)
    second = await mk.submit("spread-b", gpus=2)
    await mk.wait_remote(1, second)
    await asyncio.sleep(1.0)  # a copy on the other worker would have arrived by now
    assert await mk.remote(1, first) is None
    assert await mk.remote(0, second) is None


async def test_capacity_aware_without_any_readable_report_races_like_all_at_once(
    mk: Fleet,
) -> None:
    await mk.start(CAPACITY_AWARE, nomination_timeout=60.0)
    name = await mk.submit("blind", gpus=1)
    await mk.wait_remote(0, name)
    await mk.wait_remote(1, name)
    local = await mk.local(name)
    assert sorted(local["status"]["nominatedClusterNames"]) == sorted(mk.clusters)
    # The second worker admits first (long before a 60 s turn would have reached it).
    local = await admitted_on_one(mk, name, 1)
    assert local["status"]["clusterName"] == mk.clusters[1]
    await mk.wait_gone(0, name)


async def test_capacity_aware_with_no_report_showing_room_tries_one_worker_at_a_time(
    mk: Fleet,
) -> None:
    await mk.report_capacity(0, free_gpus=0)
    await mk.report_capacity(1, free_gpus=0)
    await mk.start(CAPACITY_AWARE, nomination_timeout=3.0)
    name = await mk.submit("fallback", gpus=1)
    await mk.wait_remote(0, name)
    assert await mk.remote(1, name) is None
    local = await mk.local(name)
    assert local["status"]["nominatedClusterNames"] == [mk.clusters[0]]

    # Worker 1 does not admit in time: its copy goes, then worker 2 gets one.
    await mk.wait_gone(0, name)
    await mk.wait_remote(1, name)
    assert await mk.remote(0, name) is None
    await mk.admit_on(1, name)
    local = await mk.wait_check(name, "Ready")
    assert local["status"]["clusterName"] == mk.clusters[1]


async def test_the_job_runs_on_the_worker_and_its_status_and_end_come_back(mk: Fleet) -> None:
    await mk.start(ALL_AT_ONCE)
    name = await mk.submit("runs")
    await mk.wait_remote(1, name)
    await admitted_on_one(mk, name, 0)
    remote_job = await mk.wait_remote(0, "runs", JOBS)
    await mk.wait_gone(1, name)

    # The manager's Job controller starts the local Job; the worker's Kueue the remote one.
    await mk.manager.patch(JOBS, "runs", {"spec": {"suspend": False}}, namespace=mk.ns)
    started = await mk.start_on(0, "runs")

    async def running() -> dict[str, Any] | None:
        job = await mk.local_job("runs")
        return job if (job.get("status") or {}).get("active") == 1 else None

    local_job = await eventually(running, what="remote Job status copied to the manager's Job")
    assert local_job["status"]["startTime"] == started

    await mk.finish_on(0, "runs", name, started=started)

    async def finished() -> dict[str, Any] | None:
        workload = await mk.local(name)
        return conditions_of(workload).get("Finished")

    done_condition = await eventually(finished, what="the manager Workload finished")
    assert (done_condition["status"], done_condition["reason"], done_condition["message"]) == (
        "True",
        "Succeeded",
        "Job finished successfully",
    )
    local_job = await mk.local_job("runs")
    assert local_job["status"]["succeeded"] == 1
    assert {c["type"] for c in local_job["status"]["conditions"]} >= {"Complete"}
    await mk.wait_gone(0, name)
    await mk.wait_gone(0, "runs", JOBS)
    assert remote_job["metadata"]["uid"]  # it was ours, and it is gone
    assert (await mk.local(name))["status"]["clusterName"] == mk.clusters[0]


async def test_eviction_on_the_worker_asks_for_a_retry_and_the_copies_go(mk: Fleet) -> None:
    await mk.start(ALL_AT_ONCE)
    name = await mk.submit("evicted")
    await mk.wait_remote(1, name)
    await admitted_on_one(mk, name, 0)
    await mk.wait_remote(0, "evicted", JOBS)

    await mk.workers[0].patch(
        WORKLOADS,
        name,
        {
            "status": {
                "conditions": [
                    condition("QuotaReserved", status="False", reason="Pending"),
                    condition("Admitted", status="False", reason="NoReservation"),
                    condition("Evicted", reason="Preempted", message="Preempted by a job"),
                ],
                "admission": None,
            }
        },
        namespace=mk.ns,
        subresource="status",
    )
    local = await mk.wait_check(name, "Retry")
    assert mk.check_state(local)["message"] == (
        f'Workload evicted on worker cluster: "{mk.clusters[0]}", resetting for re-admission.'
        ' Previously: "Ready"'
    )
    # The engine evicts on the manager and releases the quota: copies and placement go.
    await mk.release_for_retry(name)
    await mk.wait_gone(0, name)
    await mk.wait_gone(0, "evicted", JOBS)
    await mk.wait_placement_forgotten(name)


async def test_a_lost_admitting_worker_is_retried_after_the_timeout(mk: Fleet) -> None:
    await mk.start(ALL_AT_ONCE, worker_lost_timeout=3.0)
    name = await mk.submit("lost")
    await mk.wait_remote(1, name)
    await admitted_on_one(mk, name, 0)

    await mk.put_secret(0, server=f"https://127.0.0.1:{closed_port()}")
    lost_at = time.monotonic()
    local = await mk.wait_check(name, "Retry")
    assert time.monotonic() - lost_at >= 2.5  # kept Ready while within the timeout
    assert mk.check_state(local)["message"] == "Admitting remote lost"
    connected = mk.metrics.get_sample_value(
        "fleetq_multikueue_worker_connected",
        {"cluster": mk.clusters[0], "replica_role": "leader"},
    )
    assert connected == 0.0


async def test_a_brief_outage_does_not_evict(mk: Fleet) -> None:
    await mk.start(ALL_AT_ONCE, worker_lost_timeout=20.0)
    name = await mk.submit("brief")
    await mk.wait_remote(1, name)
    await admitted_on_one(mk, name, 0)
    remote = await mk.wait_remote(0, name)

    await mk.put_secret(0, server=f"https://127.0.0.1:{closed_port()}")

    async def lost() -> bool:
        return not mk.connected(0)

    await eventually(lost, what="worker 1 lost")
    await asyncio.sleep(1.0)
    await mk.put_secret(0)
    await mk.wait_connected(0)
    await asyncio.sleep(2.0)  # passes after the reconnection see the copy still admitted

    local = await mk.local(name)
    assert mk.check_state(local)["state"] == "Ready"
    assert local["status"]["clusterName"] == mk.clusters[0]
    again = await mk.remote(0, name)
    assert again is not None and again["metadata"]["uid"] == remote["metadata"]["uid"]


async def test_garbage_collection_removes_only_our_orphans(mk: Fleet) -> None:
    await mk.start(ALL_AT_ONCE, gc_interval=1.0)
    worker = mk.workers[0]
    orphan_labels = {ORIGIN_LABEL: mk.origin}
    for workload_name, labels in (("orphan", orphan_labels), ("not-ours", {})):
        workload = Workload(workload_name, mk.ns).labels(labels).queue("lq")
        await worker.create(WORKLOADS, workload.pod_set("main", 1, template=POD_TEMPLATE).obj())
    for job_name, labels in (
        ("orphan-job", {**orphan_labels, PREBUILT_LABEL: "orphan"}),
        ("user-job", {PREBUILT_LABEL: "orphan"}),
    ):
        job = Job(job_name, mk.ns).labels(labels).suspend().template(POD_TEMPLATE)
        await worker.create(JOBS, job.obj())
    await mk.wait_gone(0, "orphan")
    await mk.wait_gone(0, "orphan-job", JOBS)
    assert await mk.remote(0, "not-ours") is not None
    assert await mk.remote(0, "user-job", JOBS) is not None


async def test_a_same_named_job_on_a_worker_that_is_not_ours_is_never_touched(
    mk: Fleet,
) -> None:
    user_job = await mk.workers[0].create(
        JOBS,
        Job("shared", mk.ns).label("team", "worker").suspend().template(POD_TEMPLATE).obj(),
    )
    await mk.start(ALL_AT_ONCE, gc_interval=1.0)
    name = await mk.submit("shared")
    await mk.wait_remote(0, name)
    await admitted_on_one(mk, name, 1)
    await mk.wait_gone(0, name)
    await mk.wait_remote(1, "shared", JOBS)

    # It runs and finishes on worker 2 and everything of ours goes; the worker's own job
    # stays. (The manager's Job controller starts the local Job once it is admitted.)
    await mk.manager.patch(JOBS, "shared", {"spec": {"suspend": False}}, namespace=mk.ns)
    await mk.finish_on(1, "shared", name)
    await mk.wait_gone(1, name)
    await mk.wait_gone(1, "shared", JOBS)
    await asyncio.sleep(1.5)  # a garbage collection pass too
    still = await mk.remote(0, "shared", JOBS)
    assert still is not None
    assert still["metadata"]["uid"] == user_job["metadata"]["uid"]
    # Unchanged by us. On a full fleet the worker's own job controller may write the
    # Job's status, so compare what we could touch and who wrote it, not resourceVersion.
    assert still["spec"] == user_job["spec"]
    assert still["metadata"].get("labels") == user_job["metadata"].get("labels")
    assert still["metadata"].get("annotations") == user_job["metadata"].get("annotations")
    writers = {entry["manager"] for entry in still["metadata"].get("managedFields", [])}
    original = {entry["manager"] for entry in user_job["metadata"].get("managedFields", [])}
    assert writers <= original | {"kube-controller-manager"}


async def test_deleting_the_manager_workload_removes_its_copies(mk: Fleet) -> None:
    await mk.start(ALL_AT_ONCE, gc_interval=0)
    name = await mk.submit("deleted")
    await mk.wait_remote(0, name)
    await mk.wait_remote(1, name)
    await mk.manager.delete(WORKLOADS, name, namespace=mk.ns)
    await mk.wait_gone(0, name)
    await mk.wait_gone(1, name)


async def test_eviction_on_the_manager_deactivates_the_copy_then_removes_it(mk: Fleet) -> None:
    await mk.start(ALL_AT_ONCE)
    name = await mk.submit("preempted")
    await mk.wait_remote(1, name)
    local = await admitted_on_one(mk, name, 0)

    # The manager's engine preempts the workload; it still holds quota while it stops.
    await mk.manager.patch(
        WORKLOADS,
        name,
        {
            "status": {
                "conditions": [
                    *local["status"]["conditions"],
                    condition("Evicted", reason="Preempted", message="Preempted on the manager"),
                ]
            }
        },
        namespace=mk.ns,
        subresource="status",
    )

    async def deactivation() -> dict[str, Any] | None:
        remote = await mk.remote(0, name)
        return None if remote is None else conditions_of(remote).get("DeactivationTarget")

    target = await eventually(deactivation, what="DeactivationTarget on the worker's copy")
    assert (target["status"], target["reason"]) == ("True", "EvictedOnManagerCluster")
    assert target["message"] == "Evicted on manager: Preempted on the manager"
    assert await mk.remote(0, "preempted", JOBS) is not None

    await mk.manager.patch(
        WORKLOADS,
        name,
        {
            "status": {
                "conditions": [
                    condition("QuotaReserved", status="False", reason="Pending"),
                    condition("Evicted", reason="Preempted", message="Preempted on the manager"),
                ],
                "admission": None,
            }
        },
        namespace=mk.ns,
        subresource="status",
    )
    await mk.wait_gone(0, name)
    await mk.wait_gone(0, "preempted", JOBS)


async def test_a_priority_change_reaches_the_copy_in_place(mk: Fleet) -> None:
    await mk.start(ALL_AT_ONCE)
    name = await mk.submit("urgent")
    await mk.wait_remote(1, name)
    copy = await mk.wait_remote(0, name)
    await mk.manager.patch(WORKLOADS, name, {"spec": {"priority": 1000}}, namespace=mk.ns)

    async def patched() -> dict[str, Any] | None:
        remote = await mk.remote(0, name)
        return remote if remote and remote["spec"].get("priority") == 1000 else None

    updated = await eventually(patched, what="priority patched on the copy")
    assert updated["metadata"]["uid"] == copy["metadata"]["uid"]  # patched, not replaced


async def test_a_restarted_hub_resumes_the_nomination_without_a_second_copy(mk: Fleet) -> None:
    await mk.report_capacity(0, free_gpus=0)  # reports, but none with room: one at a time
    await mk.report_capacity(1, free_gpus=0)
    await mk.start(CAPACITY_AWARE, nomination_timeout=60.0)
    name = await mk.submit("resumed", gpus=1)
    first = await mk.wait_remote(0, name)
    await mk.restart_dispatch()
    await asyncio.sleep(1.5)  # the new dispatch has synced and reconciled the workload
    local = await mk.local(name)
    assert local["status"]["nominatedClusterNames"] == [mk.clusters[0]]
    assert await mk.remote(1, name) is None
    same = await mk.remote(0, name)
    assert same is not None and same["metadata"]["uid"] == first["metadata"]["uid"]

    await mk.admit_on(0, name)
    await mk.wait_check(name, "Ready")
    job = await mk.wait_remote(0, "resumed", JOBS)
    await mk.restart_dispatch()
    await asyncio.sleep(1.5)
    again = await mk.remote(0, "resumed", JOBS)
    assert again is not None and again["metadata"]["uid"] == job["metadata"]["uid"]
    assert await mk.remote(1, "resumed", JOBS) is None
    assert mk.check_state(await mk.local(name))["state"] == "Ready"


async def test_an_external_dispatcher_decides_and_the_copies_follow(mk: Fleet) -> None:
    await mk.start("example.com/my-dispatcher")
    name = await mk.submit("external")
    await asyncio.sleep(1.0)
    assert await mk.remote(0, name) is None and await mk.remote(1, name) is None
    await mk.manager.patch(
        WORKLOADS,
        name,
        {"status": {"nominatedClusterNames": [mk.clusters[1]]}},
        namespace=mk.ns,
        subresource="status",
    )
    await admitted_on_one(mk, name, 1)
    assert await mk.remote(0, name) is None
    assert (await mk.local(name))["status"]["clusterName"] == mk.clusters[1]


async def test_the_incremental_dispatcher_runs_a_job(mk: Fleet) -> None:
    await mk.start("kueue.x-k8s.io/multikueue-dispatcher-incremental")
    name = await mk.submit("incremental")
    await mk.wait_remote(0, name)
    await mk.wait_remote(1, name)  # step size 3 covers both workers in the first round
    local = await admitted_on_one(mk, name, 1)
    assert local["status"]["clusterName"] == mk.clusters[1]
    await mk.wait_gone(0, name)


async def test_a_copy_gone_from_a_reachable_worker_is_retried_at_once(mk: Fleet) -> None:
    await mk.start(ALL_AT_ONCE, worker_lost_timeout=600.0)
    name = await mk.submit("vanished")
    await mk.wait_remote(1, name)
    await admitted_on_one(mk, name, 0)
    await mk.workers[0].delete(WORKLOADS, name, namespace=mk.ns)
    local = await mk.wait_check(name, "Retry", timeout=15.0)
    assert mk.check_state(local)["message"] == "Admitting remote lost"

"""Elastic batch Jobs through the hub on a real apiserver (ElasticJobsViaWorkloadSlices).

A running elastic Job scaled up gets a second Workload slice naming the first; the slice
is admitted on the first one's quota plus the difference, the first is finished as
replaced, and the Job is never suspended. Scaled down, the admitted slice shrinks in
place and the ClusterQueue's usage follows.
"""

from __future__ import annotations

from typing import Any

import pytest

from core.kube.resources import JOBS
from core.manager import watched_kinds as kinds
from tests.builders.job import Job

pytestmark = pytest.mark.asyncio(loop_scope="session")

ELASTIC = {"kueue.x-k8s.io/elastic-job": "true"}
REPLACES = "kueue.x-k8s.io/workload-slice-replacement-for"


async def _workloads(cluster: Any, job: str) -> list[dict[str, Any]]:
    out = []
    for workload in await cluster.list(kinds.WORKLOADS):
        for owner in workload["metadata"].get("ownerReferences") or ():
            if owner.get("kind") == "Job" and owner.get("name") == job:
                out.append(workload)
    return out


async def _reserved_cpu(cluster: Any, cq: str, want: str) -> dict[str, Any] | None:
    status = ((await cluster.get(kinds.CLUSTER_QUEUES, cq)) or {}).get("status") or {}
    for flavor in status.get("flavorsReservation") or ():
        for resource in flavor.get("resources") or ():
            if resource["name"] == "cpu" and resource["total"] == want:
                return status
    return None


async def test_an_elastic_job_grows_through_a_replacing_slice_and_shrinks_in_place(
    hubs: Any, cluster: Any
) -> None:
    await hubs.start()
    flavor = await cluster.flavor("rf", {})
    cq = await cluster.cluster_queue("elastic", flavor, "4")
    lq = await cluster.local_queue("main", cq)
    # Ten completions, two at a time: parallelism is what may change (no webhook runs
    # here, so the Job is created suspended, as it would make it).
    job = Job("grow").queue(lq).annotations(ELASTIC).suspend().parallelism(2).completions(10)
    await cluster.create(JOBS, job.request("cpu", "1").obj())

    async def first_admitted() -> dict[str, Any] | None:
        found = await _workloads(cluster, "grow")
        ok = len(found) == 1 and cluster.is_true(found[0], "Admitted")
        return found[0] if ok else None

    first = await cluster.eventually(first_admitted, what="first slice admitted")
    assert first["metadata"]["annotations"]["kueue.x-k8s.io/elastic-job"] == "true"
    assert (
        first["metadata"]["annotations"]["kueue.x-k8s.io/workload-slice-name"]
        == (first["metadata"]["name"])
    )

    async def running() -> dict[str, Any] | None:
        job = await cluster.get(JOBS, "grow")
        return job if job is not None and job["spec"].get("suspend") is False else None

    await cluster.eventually(running, what="job started")
    await cluster.eventually(lambda: _reserved_cpu(cluster, cq, "2"), what="2 cpu reserved")

    await cluster.patch(JOBS, "grow", {"spec": {"parallelism": 3}})
    old_key = f"{cluster.namespace}/{first['metadata']['name']}"

    async def replaced() -> tuple[dict[str, Any], dict[str, Any]] | None:
        found = {w["metadata"]["name"]: w for w in await _workloads(cluster, "grow")}
        old = found.get(first["metadata"]["name"])
        new = [w for w in found.values() if w["metadata"]["annotations"].get(REPLACES) == old_key]
        if old is None or not new or not cluster.is_true(new[0], "Admitted"):
            return None
        return (old, new[0]) if cluster.is_true(old, "Finished") else None

    old, new = await cluster.eventually(replaced, what="new slice admitted, old finished")
    assert (cluster.condition(old, "Finished") or {}).get("reason") == "WorkloadSliceReplaced"
    assert new["spec"]["podSets"][0]["count"] == 3
    assert (
        new["metadata"]["annotations"]["kueue.x-k8s.io/workload-slice-name"]
        == (first["metadata"]["name"])
    )
    assert (await cluster.get(JOBS, "grow") or {})["spec"]["suspend"] is False
    await cluster.eventually(lambda: _reserved_cpu(cluster, cq, "3"), what="3 cpu reserved")

    await cluster.patch(JOBS, "grow", {"spec": {"parallelism": 1}})

    async def shrunk() -> dict[str, Any] | None:
        current = await cluster.get(kinds.WORKLOADS, new["metadata"]["name"])
        if current is None or current["spec"]["podSets"][0]["count"] != 1:
            return None
        return current

    resized = await cluster.eventually(shrunk, what="slice resized in place")
    assert cluster.is_true(resized, "Admitted")
    await cluster.eventually(lambda: _reserved_cpu(cluster, cq, "1"), what="1 cpu reserved")
    assert (
        len([w for w in await _workloads(cluster, "grow") if not cluster.is_true(w, "Finished")])
        == 1
    )

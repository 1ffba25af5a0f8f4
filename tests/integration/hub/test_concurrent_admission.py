"""Concurrent admission through the hub on a real apiserver (the ConcurrentAdmission gate).

A Job queued to a ClusterQueue with a concurrentAdmissionPolicy gets a labelled parent
Workload and one variant per flavor, each owned by the parent and annotated with its
flavor. With the preferred flavor's quota at zero the spot variant is admitted and the
parent (and so the Job) runs there; once the preferred flavor has room the parent moves
to it and the spot variant is deactivated.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from core.kube.resources import JOBS
from core.manager import watched_kinds as kinds
from core.manager.configuration import Configuration, LeaderElection
from core.manager.feature_gates import FeatureGates
from tests.builders import ClusterQueue, FlavorQuotas

pytestmark = pytest.mark.asyncio(loop_scope="session")

PARENT = "kueue.x-k8s.io/concurrent-admission-parent"
ALLOWED = "kueue.x-k8s.io/workload-allowed-resource-flavors"


def _queue(name: str, namespace: str, preferred: str, spot: str, preferred_cpu: str) -> Any:
    return (
        ClusterQueue(name)
        .only_namespace(namespace)
        .resource_group(
            FlavorQuotas(preferred).resource("cpu", preferred_cpu),
            FlavorQuotas(spot).resource("cpu", "4"),
        )
        .spec(concurrentAdmissionPolicy={"migration": {"mode": "TryPreferredFlavors"}})
    )


def _flavor_of(workload: dict[str, Any]) -> str | None:
    admission = (workload.get("status") or {}).get("admission") or {}
    assignments = admission.get("podSetAssignments") or ()
    return assignments[0]["flavors"].get("cpu") if assignments else None


async def test_a_job_runs_on_a_variant_and_migrates_to_the_preferred_flavor(
    hubs: Any, cluster: Any
) -> None:
    await hubs.start(
        dataclasses.replace(
            Configuration(),
            leader_election=LeaderElection(leader_elect=False),
            feature_gates=FeatureGates(concurrent_admission=True),
        )
    )
    preferred = await cluster.flavor("reservation", {})
    spot = await cluster.flavor("spot", {})
    cq = cluster.name("concurrent")
    await cluster.create(
        kinds.CLUSTER_QUEUES, _queue(cq, cluster.namespace, preferred, spot, "0").obj()
    )
    lq = await cluster.local_queue("main", cq)
    await cluster.job("job", lq, cpu="1")

    async def family() -> tuple[dict[str, Any], dict[str, dict[str, Any]]] | None:
        parent = await cluster.job_workload("job")
        if parent is None or parent["metadata"].get("labels", {}).get(PARENT) != "true":
            return None
        uid = parent["metadata"]["uid"]
        variants = {
            w["metadata"]["annotations"][ALLOWED]: w
            for w in await cluster.list(kinds.WORKLOADS)
            if any(o.get("uid") == uid for o in w["metadata"].get("ownerReferences") or ())
        }
        return (parent, variants) if set(variants) == {preferred, spot} else None

    await cluster.eventually(family, what="a labelled parent and one variant per flavor")

    async def parent_on(flavor: str) -> dict[str, Any] | None:
        found = await family()
        if found is None:
            return None
        parent, _ = found
        ok = cluster.is_true(parent, "Admitted") and _flavor_of(parent) == flavor
        return parent if ok else None

    await cluster.eventually(lambda: parent_on(spot), what="parent admitted on spot")

    async def running() -> dict[str, Any] | None:
        job = await cluster.get(JOBS, "job")
        return job if job is not None and job["spec"].get("suspend") is False else None

    await cluster.eventually(running, what="job started")
    found = await family()
    assert found is not None
    _, variants = found
    assert variants[preferred]["spec"].get("active", True) is True
    assert cluster.is_true(variants[spot], "Admitted")

    await cluster.patch(
        kinds.CLUSTER_QUEUES,
        cq,
        {"spec": _queue(cq, cluster.namespace, preferred, spot, "4").obj()["spec"]},
    )
    await cluster.eventually(lambda: parent_on(preferred), what="parent migrated", timeout=60)

    async def spot_deactivated() -> bool:
        found = await family()
        return found is not None and found[1][spot]["spec"].get("active") is False

    await cluster.eventually(spot_deactivated, what="spot variant deactivated")
    await cluster.eventually(running, what="job running again")

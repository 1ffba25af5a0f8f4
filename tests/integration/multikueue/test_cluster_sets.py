"""MultiKueueClusterSet on real apiservers: a MultiKueue check past upstream's 20 clusters.

The lite fleet has two workers; the big set's 25 MultiKueueClusters are the two workers'
plus 23 more whose kubeconfig Secret reaches worker 0 again. Each is a connection of its
own (client, caches, health probe) as it would be for a distinct worker, which is what
the check's Active condition and placement judge.
"""

from __future__ import annotations

import asyncio

import pytest

from core.kube.errors import Invalid
from core.kube.resources import JOBS
from tests.builders import AdmissionCheck, MultiKueueCluster, MultiKueueClusterSet
from tests.integration.multikueue.dispatch_harness import (
    CAPACITY_AWARE,
    CHECKS,
    CLUSTER_SETS,
    CLUSTERS,
    PREBUILT_LABEL,
    SET_LABEL,
    Fleet,
    eventually,
)

pytestmark = pytest.mark.asyncio(loop_scope="session")

BAD = "Cannot load the AdmissionChecks parameters: "


async def test_a_check_on_a_25_cluster_set_is_active_and_dispatches_to_its_25th(
    mk: Fleet,
) -> None:
    aliases = [f"a{i:02d}-{mk.suffix}" for i in range(23)]
    await mk.report_capacity(0, free_gpus=2)
    await mk.report_capacity(1, free_gpus=8)
    await mk.start(CAPACITY_AWARE, aliases_of_worker_0=aliases)

    condition = await mk.wait_check_active(mk.check, "Active", timeout=90)
    assert (condition["status"], condition["message"]) == ("True", "The admission check is active")
    assert mk.connections is not None
    registry = mk.connections.registry
    views = registry.workers_for_check(mk.check)
    assert [view.name for view in views] == [*aliases, *mk.clusters]  # selected: by name
    assert all(view.connected for view in views)

    # Only the 25th member's report says a 4-GPU job fits: it gets the one copy.
    name = await mk.submit("wide", gpus=4)
    await mk.wait_remote(1, name)
    assert (await mk.local(name))["status"]["nominatedClusterNames"] == [mk.clusters[1]]
    await asyncio.sleep(1.0)  # a copy on worker 0 (23 aliases and w1) would have arrived
    assert await mk.remote(0, name) is None
    await mk.admit_on(1, name)
    local = await mk.wait_check(name, "Ready")
    assert local["status"]["clusterName"] == mk.clusters[1]
    remote_job = await mk.wait_remote(1, "wide", JOBS)  # the Job follows its Workload
    assert remote_job["metadata"]["labels"][PREBUILT_LABEL] == name

    # A labelled cluster joins the set without a restart (inactive: no such Secret) ...
    late = f"late-{mk.suffix}"
    joining = MultiKueueCluster(late).label(SET_LABEL, mk.suffix).kubeconfig("no-such-secret")
    await mk.create(mk.manager, CLUSTERS, joining.obj())
    condition = await mk.wait_check_active(mk.check, "SomeActiveClusters")
    assert (condition["status"], condition["message"]) == ("True", f"Inactive clusters: [{late}]")
    assert [view.name for view in registry.workers_for_check(mk.check)] == [
        *aliases,
        late,
        *mk.clusters,
    ]

    # ... and leaves it when its label goes.
    await mk.manager.patch(CLUSTERS, late, {"metadata": {"labels": {SET_LABEL: None}}})
    await mk.wait_check_active(mk.check, "Active")
    assert len(registry.workers_for_check(mk.check)) == 25


async def test_the_apiserver_refuses_a_set_naming_nothing_or_more_than_a_thousand(
    mk: Fleet,
) -> None:
    with pytest.raises(Invalid, match="at least one of clusters and clusterSelector must be set"):
        await mk.manager.create(
            CLUSTER_SETS, MultiKueueClusterSet(f"none-{mk.suffix}").spec().obj()
        )
    names = [f"w-{i}" for i in range(1001)]
    too_many = MultiKueueClusterSet(f"many-{mk.suffix}").clusters(*names)
    with pytest.raises(Invalid, match="must have at most 1000 items"):
        await mk.manager.create(CLUSTER_SETS, too_many.obj())
    thousand = MultiKueueClusterSet(f"thousand-{mk.suffix}").clusters(*names[:1000])
    await mk.create(mk.manager, CLUSTER_SETS, thousand.obj())


async def test_bad_sets_give_the_check_a_condition_that_says_what_is_wrong(mk: Fleet) -> None:
    await mk.start_connections_only()
    missing, empty, invalid = (f"{base}-{mk.suffix}" for base in ("missing", "empty", "invalid"))
    nothing = {"key": SET_LABEL, "operator": "In", "values": [f"nobody-{mk.suffix}"]}
    await mk.create(
        mk.manager, CLUSTER_SETS, MultiKueueClusterSet(empty).selector(None, nothing).obj()
    )
    unknown_operator = {"key": SET_LABEL, "operator": "Resembles", "values": ["x"]}
    await mk.create(
        mk.manager,
        CLUSTER_SETS,
        MultiKueueClusterSet(invalid).selector(None, unknown_operator).obj(),
    )
    for name in (missing, empty, invalid):
        await mk.create(mk.manager, CHECKS, AdmissionCheck(name).multikueue_set(name).obj())
    crossed = f"crossed-{mk.suffix}"
    wrong_kind = AdmissionCheck(crossed).multikueue_set(empty)
    wrong_kind.parameters("fleetq.dev", "MultiKueueConfig", empty)
    await mk.create(mk.manager, CHECKS, wrong_kind.obj())

    condition = await mk.wait_check_active(missing, "BadConfig")
    assert (condition["status"], condition["message"]) == (
        "False",
        BAD + f'MultiKueueClusterSet.fleetq.dev "{missing}" not found',
    )
    condition = await mk.wait_check_active(empty, "NoUsableClusters")
    assert (condition["status"], condition["message"]) == (
        "False",
        f'MultiKueueClusterSet "{empty}" has no clusters: it lists none and its '
        "clusterSelector matches no MultiKueueCluster",
    )
    condition = await mk.wait_check_active(invalid, "BadConfig")
    assert condition["message"] == (
        BAD + f'MultiKueueClusterSet.fleetq.dev "{invalid}": '
        "spec.clusterSelector.matchExpressions[0].operator: Invalid value: "
        "'Resembles' is not one of In, NotIn, Exists, DoesNotExist"
    )
    condition = await mk.wait_check_active(crossed, "BadConfig")
    assert condition["message"] == (
        BAD + 'wrong kind "MultiKueueConfig", expecting "MultiKueueClusterSet": '
        "bad parameters reference"
    )

    # Each is fixed in place, no restart: the set appears, the selector is corrected.
    ghost = f"ghost-{mk.suffix}"
    await mk.create(mk.manager, CLUSTER_SETS, MultiKueueClusterSet(missing).clusters(ghost).obj())
    condition = await mk.wait_check_active(missing, "NoUsableClusters")
    assert condition["message"] == f"Missing clusters: [{ghost}]"
    await mk.manager.patch(
        CLUSTER_SETS,
        invalid,
        {"spec": {"clusterSelector": {"matchExpressions": None, "matchLabels": {SET_LABEL: "x"}}}},
    )
    condition = await mk.wait_check_active(invalid, "NoUsableClusters")
    assert condition["message"].startswith(f'MultiKueueClusterSet "{invalid}" has no clusters')

    async def deleted_set_reported() -> bool:
        found = await mk.check_active(empty)
        return found is not None and found["message"].endswith(f'"{empty}" not found')

    await mk.manager.delete(CLUSTER_SETS, empty)
    await eventually(deleted_set_reported, what="a deleted set reported as not found")

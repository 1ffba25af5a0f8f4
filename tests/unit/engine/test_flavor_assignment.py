"""Flavor assignment against a real ClusterState (no stubs): modes, borrowing, messages."""

from __future__ import annotations

from core.engine.clock import ManualClock
from core.engine.cluster_state import ClusterQueueState, ClusterState, quotas_of
from core.engine.config import EngineConfig
from core.engine.flavor_assignment import FlavorAssigner, Mode, Possibility, is_preferred
from core.engine.model import (
    ClusterQueue,
    FlavorFungibility,
    FlavorQuotas,
    FungibilityPolicy,
    FungibilityPreference,
    PodSet,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    Taint,
    Workload,
)
from core.engine.preemption import Preemptor
from core.engine.quota_tree import add_usage
from core.engine.workload_state import WorkloadState


def make_cq(
    state: ClusterState, name: str, quotas: dict[str, int], cohort: str | None = None, **kw: object
) -> ClusterQueueState:
    spec = ClusterQueue(
        name=name,
        cohort=cohort,
        resource_groups=(
            ResourceGroup(
                covered_resources=("cpu",),
                flavors=tuple(
                    FlavorQuotas(name=f, resources=(ResourceQuota(name="cpu", nominal=q),))
                    for f, q in quotas.items()
                ),
            ),
        ),
        **kw,  # type: ignore[arg-type]
    )
    node = state.tree.set_cluster_queue(name, quotas_of(spec.resource_groups), cohort, 1.0)
    cq = ClusterQueueState(spec, node)
    cq.update_spec(spec, state.flavors, state.checks)
    state.cqs[name] = cq
    return cq


def workload(cpu: int, count: int = 1, **ps: object) -> WorkloadState:
    return WorkloadState(
        Workload(
            namespace="ns",
            name="w",
            uid="w",
            queue_name="lq",
            pod_sets=(PodSet(count=count, requests={"cpu": cpu}, **ps),),  # type: ignore[arg-type]
        )
    )


def assigner(state: ClusterState, ws: WorkloadState, cq: ClusterQueueState) -> FlavorAssigner:
    return FlavorAssigner(
        ws, cq, state.flavors, fair_sharing=False, oracle=Preemptor(state).simulate
    )


def new_state(*flavors: ResourceFlavor) -> ClusterState:
    state = ClusterState(EngineConfig(), ManualClock())
    for f in flavors or (ResourceFlavor(name="f1"), ResourceFlavor(name="f2")):
        state.flavors[f.name] = f
    return state


def test_fit_in_first_flavor_records_where_search_stopped() -> None:
    state = new_state()
    cq = make_cq(state, "cq", {"f1": 4000, "f2": 4000})
    result = assigner(state, workload(1000, 2), cq).assign()
    assert result.mode() == Mode.FIT
    assert result.pod_sets[0].flavors["cpu"].flavor == "f1"
    assert result.usage == {("f1", "cpu"): 2000}
    assert result.last.tried == [{"cpu": 0}]
    assert result.last.pending_flavors()


def test_no_fit_anywhere_lists_every_flavor() -> None:
    state = new_state()
    cq = make_cq(state, "cq", {"f1": 1000, "f2": 1000})
    add_usage(cq.node, ("f1", "cpu"), 1000)
    add_usage(cq.node, ("f2", "cpu"), 1000)
    result = assigner(state, workload(1000), cq).assign()
    # Within nominal quota the oracle is asked; with no candidates the mode is Preempt.
    assert result.mode() == Mode.PREEMPT
    assert result.frs_needing_preemption() == {("f1", "cpu")}
    assert result.message() == (
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor "
        "f1, 1 more needed, insufficient unused quota for cpu in flavor f2, 1 more needed"
    )
    assert result.last.tried == [{"cpu": -1}]


def test_tainted_flavor_is_skipped() -> None:
    state = new_state(
        ResourceFlavor(name="f1", node_taints=(Taint(key="k", value="v"),)),
        ResourceFlavor(name="f2"),
    )
    cq = make_cq(state, "cq", {"f1": 4000, "f2": 4000})
    result = assigner(state, workload(1000), cq).assign()
    assert result.pod_sets[0].flavors["cpu"].flavor == "f2"


def test_borrowing_flavor_kept_unless_try_next() -> None:
    state = new_state()
    make_cq(state, "lender", {"f1": 4000}, cohort="team")
    may_stop = make_cq(state, "a", {"f1": 1000, "f2": 4000}, cohort="team")
    result = assigner(state, workload(2000), may_stop).assign()
    assert result.pod_sets[0].flavors["cpu"].flavor == "f1"
    assert result.borrowing == 1

    try_next = make_cq(
        state,
        "b",
        {"f1": 1000, "f2": 4000},
        cohort="team",
        flavor_fungibility=FlavorFungibility(when_can_borrow=FungibilityPolicy.TRY_NEXT_FLAVOR),
    )
    result = assigner(state, workload(2000), try_next).assign()
    assert result.pod_sets[0].flavors["cpu"].flavor == "f2"
    assert result.borrowing == 0


def test_preference_orders_preemption_against_borrowing() -> None:
    ff = FlavorFungibility()
    fit_borrowing = (Possibility.FIT, 1)
    preempt_local = (Possibility.PREEMPT, 0)
    assert is_preferred(fit_borrowing, preempt_local, ff)
    pob = FlavorFungibility(preference=FungibilityPreference.PREEMPTION_OVER_BORROWING)
    assert is_preferred(preempt_local, fit_borrowing, pob)
    assert not is_preferred((Possibility.NO_FIT, 0), preempt_local, ff)


def test_covered_pods_resource_counts_replicas() -> None:
    state = new_state()
    spec = ClusterQueue(
        name="cq",
        resource_groups=(
            ResourceGroup(
                covered_resources=("cpu", "pods"),
                flavors=(
                    FlavorQuotas(
                        name="f1",
                        resources=(
                            ResourceQuota(name="cpu", nominal=10000),
                            ResourceQuota(name="pods", nominal=3),
                        ),
                    ),
                ),
            ),
        ),
    )
    node = state.tree.set_cluster_queue("cq", quotas_of(spec.resource_groups), None, 1.0)
    cq = ClusterQueueState(spec, node)
    cq.update_spec(spec, state.flavors, state.checks)
    state.cqs["cq"] = cq
    result = assigner(state, workload(100, 4), cq).assign()
    assert result.mode() == Mode.NO_FIT
    assert "insufficient quota for pods in flavor f1" in result.message()
    result = assigner(state, workload(100, 3), cq).assign()
    assert result.usage == {("f1", "cpu"): 300, ("f1", "pods"): 3}


def test_partial_counts_scale_requests() -> None:
    state = new_state()
    cq = make_cq(state, "cq", {"f1": 4000})
    result = assigner(state, workload(1000, 10), cq).assign([3])
    assert result.mode() == Mode.FIT
    assert result.pod_sets[0].count == 3
    assert result.to_admission("cq").pod_set_assignments[0].resource_usage == {"cpu": 3000}

"""Topology-aware scheduling through the Engine: admissions carry placements, pending
workloads say why no domain fits, preemption makes a domain free, node inputs count."""

from __future__ import annotations

from core.api.multikueue import MULTIKUEUE_CONTROLLER_NAME
from core.api.topology_assignment import DelayedTopologyRequestState
from core.engine.clock import ManualClock
from core.engine.engine import Engine
from core.engine.model import (
    Admission,
    AdmissionCheck,
    AdmissionCheckRule,
    ClusterQueue,
    ClusterQueuePreemption,
    FlavorQuotas,
    LocalQueue,
    Node,
    PodSet,
    PodSetAssignment,
    PreemptionPolicy,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    Topology,
    TopologyAssignment,
    TopologyDomainAssignment,
    TopologyRequest,
    Workload,
    WorkloadStatus,
)

RACK = "cloud.com/topology-rack"
HOST = "kubernetes.io/hostname"


def racks_engine(
    *,
    racks: int = 2,
    hosts: int = 2,
    cpu: int = 1000,
    quota: int = 100_000,
    checks: tuple[AdmissionCheck, ...] = (),
    extra_flavor: bool = False,
    topology: bool = True,
) -> Engine:
    """racks x hosts nodes of `cpu` milli-cpu each, a TAS flavor and a generous quota."""
    e = Engine(clock=ManualClock())
    if topology:
        e.upsert_topology(Topology(name="default", levels=(RACK, HOST)))
    e.upsert_resource_flavor(
        ResourceFlavor(name="tas", node_labels={"pool": "tas"}, topology_name="default")
    )
    flavors = [FlavorQuotas(name="tas", resources=(ResourceQuota(name="cpu", nominal=quota),))]
    if extra_flavor:
        e.upsert_resource_flavor(ResourceFlavor(name="plain"))
        flavors.append(
            FlavorQuotas(name="plain", resources=(ResourceQuota(name="cpu", nominal=quota),))
        )
    for check in checks:
        e.upsert_admission_check(check)
    e.upsert_cluster_queue(
        ClusterQueue(
            name="cq",
            resource_groups=(ResourceGroup(covered_resources=("cpu",), flavors=tuple(flavors)),),
            preemption=ClusterQueuePreemption(within_cluster_queue=PreemptionPolicy.LOWER_PRIORITY),
            admission_checks=tuple(AdmissionCheckRule(name=c.name) for c in checks),
        )
    )
    e.upsert_local_queue(LocalQueue(namespace="ns", name="lq", cluster_queue="cq"))
    for r in range(racks):
        for h in range(hosts):
            e.upsert_node(
                Node(
                    name=f"r{r}-h{h}",
                    labels={"pool": "tas", RACK: f"r{r}", HOST: f"r{r}-h{h}"},
                    allocatable={"cpu": cpu, "pods": 10},
                )
            )
    return e


def job(
    name: str,
    pods: int,
    request: TopologyRequest | None,
    *,
    cpu: int = 1000,
    priority: int = 0,
    created: float = 0.0,
) -> Workload:
    return Workload(
        namespace="ns",
        name=name,
        uid=name,
        queue_name="lq",
        priority=priority,
        creation_time=created,
        pod_sets=(PodSet(count=pods, requests={"cpu": cpu}, topology_request=request),),
    )


def placed(e: Engine, key: str) -> list[tuple[str, int]]:
    status = e.workload_status(key)
    assert status is not None and status.admission is not None
    assignment = status.admission.pod_set_assignments[0].topology_assignment
    assert assignment is not None
    assert assignment.levels == (HOST,)
    return [(d.values[-1], d.count) for d in assignment.domains]


def pending_message(e: Engine, key: str) -> str:
    status = e.workload_status(key)
    assert status is not None and status.admission is None
    cond = status.condition("QuotaReserved")
    assert cond is not None and not cond.status
    return cond.message


def test_required_rack_lands_in_one_rack() -> None:
    e = racks_engine()
    e.add_workload(job("a", 2, TopologyRequest(required=RACK)))
    assert [a.key for a in e.schedule().admitted] == ["ns/a"]
    assert placed(e, "ns/a") == [("r0-h0", 1), ("r0-h1", 1)]


def test_second_job_takes_the_other_rack_then_none_is_left() -> None:
    e = racks_engine()
    for i, name in enumerate("abc"):
        e.add_workload(job(name, 2, TopologyRequest(required=RACK), created=float(i)))
    e.schedule()
    e.schedule()
    assert {h for h, _ in placed(e, "ns/a")} | {h for h, _ in placed(e, "ns/b")} == {
        "r0-h0",
        "r0-h1",
        "r1-h0",
        "r1-h1",
    }
    e.schedule()
    assert pending_message(e, "ns/c") == (
        "couldn't assign flavors to pod set main: topology \"default\" doesn't allow to fit "
        'any of 2 pod(s). Total nodes: 4; excluded: resource "cpu": 4'
    )
    # Freeing a rack lets the waiting job in.
    e.finish("ns/a")
    assert [a.key for a in e.schedule().admitted] == ["ns/c"]


def test_quota_fits_but_no_rack_does() -> None:
    e = racks_engine()
    e.add_workload(job("big", 3, TopologyRequest(required=RACK)))
    result = e.schedule()
    assert result.admitted == []
    assert pending_message(e, "ns/big") == (
        'couldn\'t assign flavors to pod set main: topology "default" allows to fit only 2 '
        "out of 3 pod(s)"
    )


def test_preferred_spreads_only_when_it_must() -> None:
    e = racks_engine()
    e.add_workload(job("two", 2, TopologyRequest(preferred=RACK)))
    e.schedule()
    assert {h[:2] for h, _ in placed(e, "ns/two")} == {"r0"}
    e = racks_engine()
    e.add_workload(job("wide", 3, TopologyRequest(preferred=RACK)))
    e.schedule()
    assert placed(e, "ns/wide") == [("r0-h0", 1), ("r0-h1", 1), ("r1-h0", 1)]


def test_pods_outside_tas_use_node_capacity() -> None:
    e = racks_engine(racks=1, hosts=2)
    e.upsert_non_tas_pod("kube-system/ds-0", "r0-h0", {"cpu": 500})
    e.add_workload(job("a", 2, TopologyRequest(required=RACK)))
    e.schedule()
    assert "allows to fit only 1 out of 2 pod(s)" in pending_message(e, "ns/a")
    e.delete_non_tas_pod("kube-system/ds-0")
    assert [a.key for a in e.schedule().admitted] == ["ns/a"]


def test_not_ready_and_unschedulable_nodes_are_not_domains() -> None:
    e = racks_engine(racks=1, hosts=2)
    e.upsert_node(
        Node(
            name="r0-h1",
            labels={"pool": "tas", RACK: "r0", HOST: "r0-h1"},
            allocatable={"cpu": 1000, "pods": 10},
            ready=False,
        )
    )
    e.add_workload(job("a", 2, TopologyRequest(required=HOST), cpu=500))
    e.schedule()
    assert placed(e, "ns/a") == [("r0-h0", 2)]
    e.add_workload(job("b", 1, TopologyRequest(required=HOST), cpu=500))
    e.schedule()
    assert "doesn't allow to fit any of 1 pod(s)" in pending_message(e, "ns/b")


def test_preemption_frees_a_rack_for_a_higher_priority_job() -> None:
    e = racks_engine()
    e.add_workload(job("keep", 2, TopologyRequest(required=RACK), priority=5))
    e.add_workload(job("low-1", 1, TopologyRequest(required=RACK), priority=1))
    e.add_workload(job("low-0", 1, TopologyRequest(required=RACK), priority=0))
    for _ in range(3):
        e.schedule()
    keep_rack = {h[:2] for h, _ in placed(e, "ns/keep")}
    assert {h[:2] for h, _ in placed(e, "ns/low-0") + placed(e, "ns/low-1")} != keep_rack
    e.add_workload(job("high", 2, TopologyRequest(required=RACK), priority=10))
    result = e.schedule()
    # Quota is plentiful: only the topology needs room. Evicting the lowest one alone
    # would leave its rack half full, so both small jobs go and the big one stays.
    assert sorted(p.victim for p in result.preempted) == ["ns/low-0", "ns/low-1"]
    assert pending_message(e, "ns/high").endswith(". Pending the preemption of 2 workload(s)")
    e.complete_eviction("ns/low-0")
    e.complete_eviction("ns/low-1")
    e.schedule()
    assert {h[:2] for h, _ in placed(e, "ns/high")} != keep_rack


def test_no_preemption_when_even_an_empty_topology_is_too_small() -> None:
    e = racks_engine()
    e.add_workload(job("low", 1, TopologyRequest(required=RACK)))
    e.schedule()
    e.add_workload(job("huge", 3, TopologyRequest(required=RACK), priority=10))
    result = e.schedule()
    assert result.preempted == []
    assert "allows to fit only" in pending_message(e, "ns/huge")


def test_flavor_without_its_topology_makes_the_queue_inactive() -> None:
    e = racks_engine(topology=False)
    status = e.cluster_queue_status("cq")
    assert status is not None
    active = next(c for c in status.conditions if c.type == "Active")
    assert not active.status
    assert active.reason == "TopologyNotFound"
    assert active.message == (
        'Can\'t admit new workloads: there is no Topology "default" for TAS flavor "tas".'
    )


def test_plain_pod_sets_skip_tas_flavors_unless_every_flavor_is_tas() -> None:
    mixed = racks_engine(extra_flavor=True)
    mixed.add_workload(job("plain", 1, None))
    mixed.schedule()
    status = mixed.workload_status("ns/plain")
    assert status is not None and status.admission is not None
    psa = status.admission.pod_set_assignments[0]
    assert psa.flavors == {"cpu": "plain"}
    assert psa.topology_assignment is None
    # In a TAS-only queue TAS is implied: the pod set is placed unconstrained.
    only = racks_engine()
    only.add_workload(job("plain", 3, None))
    only.schedule()
    assert sum(c for _, c in placed(only, "ns/plain")) == 3


def test_tas_pod_set_says_why_a_plain_flavor_cannot_serve_it() -> None:
    e = racks_engine(extra_flavor=True, quota=1000)
    e.add_workload(job("too-big", 2, TopologyRequest(required=RACK)))
    e.schedule()
    assert pending_message(e, "ns/too-big") == (
        "couldn't assign flavors to pod set main: "
        'Flavor "plain" does not support TopologyAwareScheduling, '
        "insufficient quota for cpu in flavor tas, previously considered podsets requests (0) "
        "+ current podset request (2) > maximum capacity (1)"
    )


def test_multikueue_defers_the_placement_to_the_worker() -> None:
    check = AdmissionCheck(name="mk", controller_name=MULTIKUEUE_CONTROLLER_NAME)
    e = racks_engine(checks=(check,))
    e.add_workload(job("a", 2, TopologyRequest(required=RACK)))
    e.schedule()
    status = e.workload_status("ns/a")
    assert status is not None and status.admission is not None
    psa = status.admission.pod_set_assignments[0]
    assert psa.topology_assignment is None
    assert psa.delayed_topology_request == DelayedTopologyRequestState.PENDING


def test_adopted_admission_counts_its_placement() -> None:
    e = racks_engine(racks=1, hosts=2)
    admission = Admission(
        cluster_queue="cq",
        pod_set_assignments=(
            PodSetAssignment(
                name="main",
                flavors={"cpu": "tas"},
                resource_usage={"cpu": 1000},
                count=1,
                topology_assignment=TopologyAssignment(
                    levels=(HOST,), domains=(TopologyDomainAssignment(values=("r0-h0",), count=1),)
                ),
            ),
        ),
    )
    from core.engine.model import Condition

    adopted = job("old", 1, TopologyRequest(required=HOST))
    adopted = Workload(
        **{
            **{f: getattr(adopted, f) for f in adopted.__dataclass_fields__},
            "status": WorkloadStatus(
                admission=admission,
                conditions=(
                    Condition(
                        type="QuotaReserved",
                        status=True,
                        reason="QuotaReserved",
                        message="",
                        last_transition_time=0.0,
                    ),
                ),
            ),
        }
    )
    e.add_workload(adopted)
    e.add_workload(job("new", 2, TopologyRequest(required=RACK), created=1.0))
    e.schedule()
    assert "allows to fit only 1 out of 2 pod(s)" in pending_message(e, "ns/new")


def test_freed_nodes_wake_other_queues_on_the_same_flavor() -> None:
    e = racks_engine(racks=1, hosts=2)
    e.upsert_cluster_queue(
        ClusterQueue(
            name="other",
            resource_groups=(
                ResourceGroup(
                    covered_resources=("cpu",),
                    flavors=(
                        FlavorQuotas(
                            name="tas", resources=(ResourceQuota(name="cpu", nominal=10_000),)
                        ),
                    ),
                ),
            ),
        )
    )
    e.upsert_local_queue(LocalQueue(namespace="ns", name="other", cluster_queue="other"))
    e.add_workload(job("first", 2, TopologyRequest(required=RACK)))
    e.schedule()
    second = Workload(
        namespace="ns",
        name="second",
        uid="second",
        queue_name="other",
        creation_time=1.0,
        pod_sets=(
            PodSet(
                count=2, requests={"cpu": 1000}, topology_request=TopologyRequest(required=RACK)
            ),
        ),
    )
    e.add_workload(second)
    e.schedule()
    assert e.inadmissible_workloads("other") == ["ns/second"]
    e.finish("ns/first")
    assert [a.key for a in e.schedule().admitted] == ["ns/second"]


def test_a_leader_and_its_workers_share_one_rack() -> None:
    e = racks_engine(racks=2, hosts=2, cpu=2000)
    group = TopologyRequest(required=RACK, group_name="lws")
    e.add_workload(
        Workload(
            namespace="ns",
            name="lws",
            uid="lws",
            queue_name="lq",
            pod_sets=(
                PodSet(name="leader", count=1, requests={"cpu": 1000}, topology_request=group),
                PodSet(name="workers", count=3, requests={"cpu": 1000}, topology_request=group),
            ),
        )
    )
    e.schedule()
    status = e.workload_status("ns/lws")
    assert status is not None and status.admission is not None
    racks = set()
    pods = 0
    for psa in status.admission.pod_set_assignments:
        assert psa.topology_assignment is not None
        racks |= {d.values[-1][:2] for d in psa.topology_assignment.domains}
        pods += sum(d.count for d in psa.topology_assignment.domains)
    assert len(racks) == 1 and pods == 4

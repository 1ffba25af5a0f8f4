"""A generated scenario in the engine's vocabulary: flavor, cohorts, queues, workloads.

Kept apart from the event loop so the benchmark and tests can build exactly the objects a
simulation would, without running one.
"""

from __future__ import annotations

from core.engine.engine import Engine
from core.engine.model import (
    ClusterQueue,
    ClusterQueuePreemption,
    Cohort,
    FlavorQuotas,
    LocalQueue,
    Namespace,
    Node,
    PodSet,
    PreemptionPolicy,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    SliceLayer,
    Topology,
    TopologyRequest,
    Workload,
    workload_key,
)
from core.engine.simulator.generator import (
    RESOURCE_NAME,
    QueueSpec,
    Scenario,
    WorkloadArrival,
)


def cluster_queue(spec: QueueSpec, flavor: str) -> ClusterQueue:
    """The ClusterQueue upstream's runner creates for a queue set entry: one flavor, CPU."""
    quota = ResourceQuota(
        name=RESOURCE_NAME,
        nominal=spec.nominal_milli,
        borrowing_limit=spec.borrowing_limit_milli,
    )
    group = ResourceGroup(
        covered_resources=(RESOURCE_NAME,),
        flavors=(FlavorQuotas(name=flavor, resources=(quota,)),),
    )
    return ClusterQueue(
        name=spec.name,
        cohort=spec.cohort,
        resource_groups=(group,),
        preemption=ClusterQueuePreemption(
            within_cluster_queue=PreemptionPolicy(spec.within_cluster_queue.value),
            reclaim_within_cohort=PreemptionPolicy(spec.reclaim_within_cohort.value),
        ),
    )


def local_queue(spec: QueueSpec) -> LocalQueue:
    """The queue's LocalQueue: same name as the ClusterQueue, in the same-named namespace."""
    return LocalQueue(namespace=spec.name, name=spec.name, cluster_queue=spec.name)


def topology_request(arrival: WorkloadArrival) -> TopologyRequest | None:
    """The pod set's topology request as upstream's runner builds it (see generator)."""
    level, constraint = arrival.tas_level, arrival.tas_constraint
    if not level:
        return None
    if constraint == "required":
        return TopologyRequest(required=level)
    if constraint == "preferred":
        return TopologyRequest(preferred=level)
    size = arrival.slice_size or arrival.pod_count
    return TopologyRequest(slices=(SliceLayer(level=level, size=size),))


def workload(arrival: WorkloadArrival) -> Workload:
    """One workload of ``podCount`` pods (1 unless the file says), each requesting
    ``request`` CPU, created at its arrival time."""
    pod_set = PodSet(
        name="main",
        count=arrival.pod_count,
        requests={RESOURCE_NAME: arrival.request_milli},
        topology_request=topology_request(arrival),
    )
    return Workload(
        namespace=arrival.namespace,
        name=arrival.name,
        uid=f"sim-{arrival.seq}",
        queue_name=local_queue_name(arrival),
        pod_sets=(pod_set,),
        priority=arrival.priority,
        creation_time=arrival.created_ms / 1000.0,
    )


def local_queue_name(arrival: WorkloadArrival) -> str:
    return arrival.cluster_queue


def arrival_key(arrival: WorkloadArrival) -> str:
    return workload_key(arrival.namespace, arrival.name)


def install_queues(engine: Engine, scenario: Scenario) -> None:
    """Create the flavor (with its Topology and nodes when topology-aware), cohorts,
    namespaces, ClusterQueues and LocalQueues of a scenario."""
    topology = scenario.topology
    if topology is None:
        engine.upsert_resource_flavor(ResourceFlavor(name=scenario.flavor_name))
    else:
        engine.upsert_topology(Topology(name=topology.name, levels=topology.levels))
        allocatable = dict(topology.allocatable)
        for node in topology.nodes:
            engine.upsert_node(
                Node(name=node.name, labels=dict(node.labels), allocatable=allocatable)
            )
        engine.upsert_resource_flavor(
            ResourceFlavor(
                name=scenario.flavor_name,
                node_labels=dict(topology.flavor_node_labels),
                topology_name=topology.name,
            )
        )
    for name in scenario.cohorts:
        engine.upsert_cohort(Cohort(name=name))
    for spec in scenario.queues:
        engine.upsert_namespace(Namespace(name=spec.name))
        engine.upsert_cluster_queue(cluster_queue(spec, scenario.flavor_name))
        engine.upsert_local_queue(local_queue(spec))

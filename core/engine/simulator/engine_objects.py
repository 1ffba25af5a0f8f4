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
    PodSet,
    PreemptionPolicy,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
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


def workload(arrival: WorkloadArrival) -> Workload:
    """One single-pod workload requesting ``request`` CPU, created at its arrival time."""
    return Workload(
        namespace=arrival.namespace,
        name=arrival.name,
        uid=f"sim-{arrival.seq}",
        queue_name=local_queue_name(arrival),
        pod_sets=(PodSet(name="main", count=1, requests={RESOURCE_NAME: arrival.request_milli}),),
        priority=arrival.priority,
        creation_time=arrival.created_ms / 1000.0,
    )


def local_queue_name(arrival: WorkloadArrival) -> str:
    return arrival.cluster_queue


def arrival_key(arrival: WorkloadArrival) -> str:
    return workload_key(arrival.namespace, arrival.name)


def install_queues(engine: Engine, scenario: Scenario) -> None:
    """Create the flavor, cohorts, namespaces, ClusterQueues and LocalQueues of a scenario."""
    engine.upsert_resource_flavor(ResourceFlavor(name=scenario.flavor_name))
    for name in scenario.cohorts:
        engine.upsert_cohort(Cohort(name=name))
    for spec in scenario.queues:
        engine.upsert_namespace(Namespace(name=spec.name))
        engine.upsert_cluster_queue(cluster_queue(spec, scenario.flavor_name))
        engine.upsert_local_queue(local_queue(spec))

"""WorkerCapacity (fleetq.dev/v1alpha1): what a worker cluster can take right now.

The worker agent keeps one of these up to date on its own cluster (about once a second, or
on change); the hub reads it to place each workload on the worker that fits it best
instead of racing copies to every worker. Free capacity alone is not enough to place a
multi-pod job, so the agent also reports the largest free blocks on single nodes.
"""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Annotated

import msgspec

from core.api.api_struct import ApiStruct
from core.api.core_v1 import ResourceList
from core.api.groups import FLEETQ_API_VERSION
from core.api.markers import (
    ClusterQueueReference,
    Int32,
    ResourceFlavorReference,
    always,
    doc,
)
from core.api.meta import Condition, ObjectMeta

MAX_REPORTED_FLAVORS = 64
MAX_REPORTED_CLUSTER_QUEUES = 256
MAX_FREE_BLOCKS = 16
MAX_TOPOLOGY_LEVELS = 8
MAX_DOMAINS_PER_LEVEL = 16
MAX_DOMAIN_FREE_BLOCKS = 8


class WorkerCapacityConditionType(enum.StrEnum):
    """Condition types set on a WorkerCapacity by the agent."""

    REPORTING = "Reporting"
    """The agent is running and its report is current."""


class TopologyDomainCapacity(ApiStruct):
    """Free room of one topology domain (a block, a rack) of a TAS flavor."""

    values: Annotated[
        list[str],
        doc(
            "The domain's label values, one per level from the top down to its own.",
            required=True,
            max_items=MAX_TOPOLOGY_LEVELS,
            list_type="atomic",
        ),
    ] = []
    node_count: Annotated[Int32, doc("Ready, schedulable nodes of the flavor in the domain.")] = 0
    free: Annotated[ResourceList, doc("Free resources of those nodes, summed.")] = {}
    largest_free_blocks: Annotated[
        list[ResourceList],
        doc(
            "Free resources of the domain's nodes with the most room, largest first.",
            max_items=MAX_DOMAIN_FREE_BLOCKS,
            list_type="atomic",
        ),
    ] = []


class TopologyLevelCapacity(ApiStruct):
    """The domains of one topology level with the most free room."""

    node_label: Annotated[str, doc("The level's node label.", required=True, max_length=317)]
    domain_count: Annotated[Int32, doc("Domains of this level the flavor has.")] = 0
    domains: Annotated[
        list[TopologyDomainCapacity],
        doc(
            "The domains with the most free room, largest first.",
            max_items=MAX_DOMAINS_PER_LEVEL,
            list_type="atomic",
        ),
    ] = []


class FlavorTopologyCapacity(ApiStruct):
    """Per-domain free capacity of a TAS flavor, level by level (the hostname level is the
    flavor's free blocks)."""

    topology_name: Annotated[str, doc("The flavor's Topology.", required=True, max_length=253)]
    levels: Annotated[
        list[TopologyLevelCapacity],
        doc(
            "Every level above the hostname, widest first.",
            max_items=MAX_TOPOLOGY_LEVELS,
            list_type="atomic",
        ),
    ] = []


class FlavorCapacity(ApiStruct):
    """Capacity of the nodes that match one ResourceFlavor."""

    name: Annotated[ResourceFlavorReference, doc("Name of the ResourceFlavor.", required=True)]
    node_count: Annotated[Int32, doc("Ready, schedulable nodes matching the flavor.")] = 0
    allocatable: Annotated[ResourceList, doc("Sum of the nodes' allocatable resources.")] = {}
    requested: Annotated[
        ResourceList, doc("Sum of the requests of pods running or bound on those nodes.")
    ] = {}
    free: Annotated[ResourceList, doc("allocatable minus requested.")] = {}
    largest_free_blocks: Annotated[
        list[ResourceList],
        doc(
            "Free resources of the nodes with the most room, largest first: a pod fits"
            " the flavor only if it fits one of these.",
            max_items=MAX_FREE_BLOCKS,
            list_type="atomic",
        ),
    ] = []
    topology: Annotated[
        FlavorTopologyCapacity | None,
        doc("For a TAS flavor: free capacity per topology domain."),
    ] = None


class FlavorResources(ApiStruct):
    """Amounts of resources within one flavor."""

    name: Annotated[ResourceFlavorReference, doc("Name of the ResourceFlavor.", required=True)]
    resources: Annotated[ResourceList, doc("Amount per resource.")] = {}


class ClusterQueueCapacity(ApiStruct):
    """Quota and usage of one ClusterQueue on the worker."""

    name: Annotated[ClusterQueueReference, doc("Name of the ClusterQueue.", required=True)]
    quota: Annotated[
        list[FlavorResources],
        doc(
            "Nominal quota per flavor.",
            max_items=MAX_REPORTED_FLAVORS,
            list_type="map",
            list_map_keys=("name",),
        ),
    ] = []
    usage: Annotated[
        list[FlavorResources],
        doc(
            "Quota in use per flavor.",
            max_items=MAX_REPORTED_FLAVORS,
            list_type="map",
            list_map_keys=("name",),
        ),
    ] = []
    pending_workloads: Annotated[Int32, doc("Workloads waiting in this queue.")] = always(0)
    admitted_workloads: Annotated[Int32, doc("Admitted workloads not finished yet.")] = always(0)


class WorkerCapacitySpec(ApiStruct):
    """Identity of the worker the report describes."""

    cluster_name: Annotated[
        str, doc("Name the hub knows this worker by (its MultiKueueCluster).", max_length=256)
    ] = ""


class WorkerCapacityStatus(ApiStruct):
    """The agent's latest report."""

    observed_time: Annotated[datetime | None, doc("When the agent took this snapshot.")] = None
    flavors: Annotated[
        list[FlavorCapacity],
        doc(
            "Capacity per ResourceFlavor.",
            max_items=MAX_REPORTED_FLAVORS,
            list_type="map",
            list_map_keys=("name",),
        ),
    ] = []
    cluster_queues: Annotated[
        list[ClusterQueueCapacity],
        doc(
            "Quota, usage and backlog per ClusterQueue on the worker.",
            max_items=MAX_REPORTED_CLUSTER_QUEUES,
            list_type="map",
            list_map_keys=("name",),
        ),
    ] = []
    conditions: Annotated[
        list[Condition],
        doc(
            "Latest observations, such as Reporting.",
            max_items=16,
            list_type="map",
            list_map_keys=("type",),
        ),
    ] = []


class WorkerCapacity(ApiStruct):
    """Free capacity of a worker cluster, published by its agent for the hub's dispatcher."""

    api_version: str = always(FLEETQ_API_VERSION)
    kind: str = always("WorkerCapacity")
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: Annotated[WorkerCapacitySpec, doc("Which worker this is.")] = msgspec.field(
        default_factory=WorkerCapacitySpec
    )
    status: Annotated[WorkerCapacityStatus, doc("The latest capacity report.")] = msgspec.field(
        default_factory=WorkerCapacityStatus
    )

"""The WorkerCapacity report: per flavor, what the worker's nodes hold and have free.

Built from plain inputs (node and pod dicts as the API returns them, the worker's
ResourceFlavors, its ClusterQueues' spec and engine status) so the agent's controller only
feeds caches in and writes the result out. Everything is sorted (flavors and ClusterQueues
by name, resources by name, blocks by size then node name), so an unchanged cluster gives
an identical report apart from `observedTime`: `report_due` tells the agent when writing
is worth it (a change, or the heartbeat the hub uses to tell a live agent from a gone one).

Per flavor (see `node_pool` for which nodes count):
- nodeCount: the nodes that count; allocatable: their allocatable, summed;
- requested: what the pods on them request (`pod_load`);
- free: per node allocatable minus requested, never negative, summed (an overcommitted
  node does not eat into its neighbours' room);
- largestFreeBlocks: the free room of the MAX_FREE_BLOCKS nodes with the most of it
  (`free_blocks`), each listing every allocatable resource of its node, zeros included;
- topology (TAS flavors whose Topology exists): free room per domain of each level above
  the hostname (`topology_domains`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

import msgspec

from core.api.codec import encode
from core.api.json_types import Json
from core.api.meta import ObjectMeta
from core.api.resource_flavor import ResourceFlavor
from core.api.worker_capacity import (
    MAX_REPORTED_CLUSTER_QUEUES,
    MAX_REPORTED_FLAVORS,
    FlavorCapacity,
    WorkerCapacity,
    WorkerCapacitySpec,
    WorkerCapacityStatus,
)
from core.engine.dispatch.capacity_snapshot import REPORT_HEARTBEAT_SECONDS
from worker_agent.capacity.free_blocks import largest_free_blocks, node_free
from worker_agent.capacity.node_pool import NodeView, engine_flavor, serves_flavor, usable_nodes
from worker_agent.capacity.pod_load import requested_per_node
from worker_agent.capacity.queue_figures import (
    ClusterQueueFigures,
    cluster_queue_capacity,
    resource_list,
)
from worker_agent.capacity.topology_domains import topology_capacity


def _add(total: dict[str, int], amounts: Mapping[str, int]) -> None:
    for resource, amount in amounts.items():
        total[resource] = total.get(resource, 0) + amount


def flavor_capacity(
    flavor: ResourceFlavor,
    nodes: Iterable[NodeView],
    requested: Mapping[str, Mapping[str, int]],
    topologies: Mapping[str, Sequence[str]] | None = None,
) -> FlavorCapacity:
    """The report entry of one flavor, given the usable nodes and each node's requests;
    `topologies` (Topology name -> level labels) give a TAS flavor its domains."""
    model = engine_flavor(flavor)
    members = [node for node in nodes if serves_flavor(node, model)]
    allocatable: dict[str, int] = {}
    used: dict[str, int] = {}
    free: dict[str, int] = {}
    free_by_node = []
    for node in members:
        on_node = requested.get(node.name, {})
        room = node_free(node.allocatable, on_node)
        _add(allocatable, node.allocatable)
        _add(used, dict.fromkeys(node.allocatable, 0))  # list every resource, zeros too
        _add(used, on_node)
        _add(free, room)
        free_by_node.append((node.name, room))
    topology_name = flavor.spec.topology_name
    levels = (topologies or {}).get(topology_name or "")
    return FlavorCapacity(
        name=flavor.metadata.name,
        node_count=len(members),
        allocatable=resource_list(allocatable),
        requested=resource_list(used),
        free=resource_list(free),
        largest_free_blocks=[resource_list(dict(b)) for b in largest_free_blocks(free_by_node)],
        topology=(
            topology_capacity(topology_name, levels, members, dict(free_by_node))
            if topology_name and levels
            else None
        ),
    )


def build_report(
    *,
    cluster_name: str,
    nodes: Iterable[Json],
    pods: Iterable[Json],
    flavors: Iterable[ResourceFlavor],
    cluster_queues: Iterable[ClusterQueueFigures],
    now: datetime,
    name: str | None = None,
    topologies: Mapping[str, Sequence[str]] | None = None,
) -> WorkerCapacity:
    """The worker's report at `now` (a timezone-aware time); named `name` or the cluster.

    At most MAX_REPORTED_FLAVORS flavors and MAX_REPORTED_CLUSTER_QUEUES ClusterQueues are
    listed, the first by name; the Reporting condition is the controller's to set.
    """
    usable = usable_nodes(nodes)
    requested = requested_per_node(pods)
    chosen_flavors = sorted(flavors, key=lambda f: f.metadata.name)[:MAX_REPORTED_FLAVORS]
    queues = sorted(cluster_queues, key=lambda q: q.spec.name)[:MAX_REPORTED_CLUSTER_QUEUES]
    return WorkerCapacity(
        metadata=ObjectMeta(name=name or cluster_name),
        spec=WorkerCapacitySpec(cluster_name=cluster_name),
        status=WorkerCapacityStatus(
            observed_time=now,
            flavors=[flavor_capacity(f, usable, requested, topologies) for f in chosen_flavors],
            cluster_queues=[cluster_queue_capacity(q) for q in queues],
        ),
    )


def _content(report: WorkerCapacity) -> tuple[bytes, bytes]:
    status = msgspec.structs.replace(report.status, observed_time=None)
    return encode(report.spec), encode(status)


def report_changed(old: WorkerCapacity | None, new: WorkerCapacity) -> bool:
    """Whether `new` says anything `old` did not; observedTime and metadata are ignored."""
    return old is None or _content(old) != _content(new)


def report_due(
    old: WorkerCapacity | None,
    new: WorkerCapacity,
    now: datetime,
    heartbeat: float = REPORT_HEARTBEAT_SECONDS,
) -> bool:
    """Whether to write `new`: it changed, or `old` is a heartbeat old (so the hub can
    tell a quiet worker from an agent that is gone)."""
    if old is None or report_changed(old, new):
        return True
    observed = old.status.observed_time
    return observed is None or (now - observed).total_seconds() >= heartbeat

"""A worker's capacity report in engine terms: integers, parsed once per report.

The hub receives a `WorkerCapacity` (quantities as text) whenever an agent writes one, and
may assess many workloads against it before the next; parsing here, once, keeps every
placement decision integer arithmetic. A report the agent could not have written (a
quantity that does not parse) is refused as a whole with `InvalidReportError`, so the
dispatcher treats that worker as unknown rather than trusting half a report.

Freshness: the agent writes on change and, even when nothing changes, at least every
`REPORT_HEARTBEAT_SECONDS`; a report whose `observedTime` is older than
`MAX_REPORT_AGE_SECONDS` therefore means the agent is gone or cut off. `observedTime` is
the worker's wall clock, so the bound allows for ordinary clock skew between clusters.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from core.api.meta import ConditionStatus
from core.api.quantity import QuantityError
from core.api.worker_capacity import (
    MAX_REPORTED_CLUSTER_QUEUES,
    WorkerCapacity,
    WorkerCapacityConditionType,
)
from core.engine.quantity import to_base_units

REPORT_HEARTBEAT_SECONDS = 30.0
MAX_REPORT_AGE_SECONDS = 3 * REPORT_HEARTBEAT_SECONDS

ResourceAmounts = Mapping[str, int]
_EMPTY: ResourceAmounts = MappingProxyType({})


class InvalidReportError(ValueError):
    """The report holds something no agent writes (such as a quantity that does not parse)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FlavorSnapshot:
    """Free room of the nodes behind one ResourceFlavor, in engine base units."""

    name: str
    node_count: int = 0
    free: ResourceAmounts = field(default_factory=dict)
    # Free room of the nodes with the most of it, largest first (see resource_order).
    blocks: tuple[ResourceAmounts, ...] = ()
    # A TAS flavor's Topology, and per level label its reported domains (each one a
    # snapshot of its own nodes, named by its label values), largest first.
    topology_name: str | None = None
    domains: Mapping[str, tuple[FlavorSnapshot, ...]] = field(default_factory=dict)

    @property
    def has_unreported_nodes(self) -> bool:
        """True when the flavor has more nodes than the report lists blocks for."""
        return self.node_count > len(self.blocks)

    def unreported_free(self) -> dict[str, int]:
        """Free room of the nodes not listed as blocks, summed (never negative)."""
        rest = dict(self.free)
        for block in self.blocks:
            for resource, amount in block.items():
                rest[resource] = max(0, rest.get(resource, 0) - amount)
        return rest


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueSnapshot:
    """A worker ClusterQueue's nominal quota and reserved quota."""

    name: str
    # (flavor, nominal quota per resource), in the ClusterQueue's order of preference.
    quota: tuple[tuple[str, ResourceAmounts], ...] = ()
    # Quota reserved by workloads, per flavor and resource.
    usage: Mapping[str, ResourceAmounts] = field(default_factory=dict)
    pending_workloads: int = 0
    admitted_workloads: int = 0

    def reserved(self, flavor: str, resource: str) -> int:
        """Quota of `resource` in `flavor` that admitted or reserving workloads hold."""
        return self.usage.get(flavor, _EMPTY).get(resource, 0)


@dataclass(frozen=True, slots=True, kw_only=True)
class CapacitySnapshot:
    """Everything the dispatcher reads from one worker's report."""

    cluster_name: str
    # Seconds since the epoch when the agent took the report; None if it never said.
    observed_at: float | None
    # False when the agent itself marked the report as not current.
    reporting: bool = True
    flavors: Mapping[str, FlavorSnapshot] = field(default_factory=dict)
    cluster_queues: Mapping[str, QueueSnapshot] = field(default_factory=dict)
    # True when the report hit its cap on ClusterQueues, so a missing one may exist.
    cluster_queues_truncated: bool = False

    def is_fresh(self, now: float, max_age: float = MAX_REPORT_AGE_SECONDS) -> bool:
        """Whether the report can be trusted at `now` (seconds since the epoch)."""
        if not self.reporting or self.observed_at is None:
            return False
        return now - self.observed_at <= max_age


def _amounts(resources: Mapping[str, str | int], where: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for resource in sorted(resources):
        try:
            amount = to_base_units(resource, resources[resource])
        except QuantityError as exc:
            raise InvalidReportError(f"{where}: {resource}: {exc}") from exc
        out[resource] = max(0, amount)
    return out


def snapshot_from_report(report: WorkerCapacity) -> CapacitySnapshot:
    """Parse a WorkerCapacity once; raises InvalidReportError on a malformed quantity."""
    status = report.status
    flavors = {}
    for flavor in status.flavors:
        where = f"flavor {flavor.name}"
        topology = flavor.topology
        flavors[flavor.name] = FlavorSnapshot(
            name=flavor.name,
            node_count=max(0, flavor.node_count),
            free=_amounts(flavor.free, where),
            blocks=tuple(_amounts(block, where) for block in flavor.largest_free_blocks),
            topology_name=topology.topology_name if topology is not None else None,
            domains={
                level.node_label: tuple(
                    FlavorSnapshot(
                        name=",".join(domain.values),
                        node_count=max(0, domain.node_count),
                        free=_amounts(domain.free, where),
                        blocks=tuple(_amounts(b, where) for b in domain.largest_free_blocks),
                    )
                    for domain in level.domains
                )
                for level in (topology.levels if topology is not None else ())
            },
        )
    queues = {}
    for cq in status.cluster_queues:
        where = f"clusterQueue {cq.name}"
        queues[cq.name] = QueueSnapshot(
            name=cq.name,
            quota=tuple((fr.name, _amounts(fr.resources, where)) for fr in cq.quota),
            usage={fr.name: _amounts(fr.resources, where) for fr in cq.usage},
            pending_workloads=cq.pending_workloads,
            admitted_workloads=cq.admitted_workloads,
        )
    reporting = all(
        cond.status == ConditionStatus.TRUE
        for cond in status.conditions
        if cond.type == WorkerCapacityConditionType.REPORTING
    )
    observed = status.observed_time
    return CapacitySnapshot(
        cluster_name=report.spec.cluster_name or report.metadata.name,
        observed_at=None if observed is None else observed.timestamp(),
        reporting=reporting,
        flavors=flavors,
        cluster_queues=queues,
        cluster_queues_truncated=len(status.cluster_queues) >= MAX_REPORTED_CLUSTER_QUEUES,
    )

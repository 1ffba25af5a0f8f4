"""The engine's cache: every object it was given, indexed the way scheduling reads them.

`ClusterState` is shared by the scheduling cycle, preemption and lifecycle code; the
`Engine` facade is the only writer from outside. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Container, Hashable, Iterable
from dataclasses import dataclass

from core.api.cluster_queue import QueueActiveReason
from core.api.multikueue import MULTIKUEUE_CONTROLLER_NAME
from core.engine.clock import Clock
from core.engine.config import EngineConfig
from core.engine.model import (
    AdmissionCheck,
    ClusterQueue,
    LocalQueue,
    Namespace,
    ResourceFlavor,
    ResourceGroup,
    StopPolicy,
    WorkloadPriorityClass,
)
from core.engine.pending_queue import PendingQueue, QueueWatcher
from core.engine.queue_index import QueueIndex
from core.engine.quota_tree import FlavorResource, Quota, QuotaNode, QuotaTree
from core.engine.resource_defaults import (
    NO_DEFAULTS,
    LimitRange,
    NamespaceDefaults,
    RuntimeClass,
    summarize,
)
from core.engine.topology_state import TopologyState
from core.engine.workload_state import WorkloadState


@dataclass(frozen=True, slots=True)
class ResourceGroupInfo:
    covered: frozenset[str]
    flavors: tuple[str, ...]
    # Node label keys set by any flavor of the group: the keys flavor matching looks at.
    label_keys: frozenset[str]


def quotas_of(groups: Iterable[ResourceGroup]) -> dict[FlavorResource, Quota]:
    out: dict[FlavorResource, Quota] = {}
    for group in groups:
        for flavor in group.flavors:
            for rq in flavor.resources:
                out[(flavor.name, rq.name)] = Quota(
                    rq.nominal, rq.borrowing_limit, rq.lending_limit
                )
    return out


class ClusterQueueState:
    """A ClusterQueue: spec, quota node, pending queue and reserving workloads."""

    __slots__ = (
        "_in_cycle",
        "_inactive",
        "admission_checks",
        "generation",
        "groups",
        "inactive_checks",
        "missing_checks",
        "missing_flavors",
        "missing_topologies",
        "multikueue",
        "name",
        "node",
        "queue",
        "reserving",
        "rg_by_resource",
        "spec",
        "tas_flavors",
        "tas_only",
    )

    def __init__(
        self, spec: ClusterQueue, node: QuotaNode, watcher: QueueWatcher | None = None
    ) -> None:
        self.name = spec.name
        self.spec = spec
        self.node = node
        self.queue = PendingQueue(spec.name, spec.queueing_strategy, watcher)
        # Workloads holding quota here (reserved or admitted, evicted but not released).
        self.reserving: dict[str, WorkloadState] = {}
        # Bumped whenever capacity may have grown, invalidating remembered flavor searches.
        self.generation = 1
        self.groups: list[ResourceGroupInfo] = []
        self.rg_by_resource: dict[str, ResourceGroupInfo] = {}
        self.missing_flavors: list[str] = []
        self.missing_checks: list[str] = []
        self.inactive_checks: list[str] = []
        # TAS flavors (flavor -> Topology name), whether every flavor is one, those whose
        # Topology is missing, and whether a MultiKueue check defers placement to a worker.
        self.tas_flavors: dict[str, str] = {}
        self.tas_only = False
        self.missing_topologies: list[tuple[str, str]] = []
        self.multikueue = False
        self._in_cycle = False
        # check name -> flavors it applies to (empty = all flavors)
        self.admission_checks: dict[str, frozenset[str]] = {}
        # Why the CQ is inactive (None: active). Every cycle asks, so it is worked out only
        # when an input changes: the spec, the references it resolves, the cohort cycle.
        self._inactive = self._work_out_inactive_reason()

    def update_spec(
        self,
        spec: ClusterQueue,
        flavors: dict[str, ResourceFlavor],
        checks: dict[str, AdmissionCheck],
        topologies: Container[str] = (),
    ) -> None:
        self.spec = spec
        self.queue.strategy = spec.queueing_strategy
        self.refresh_references(flavors, checks, topologies)
        self.admission_checks = {
            rule.name: frozenset(rule.on_flavors) for rule in spec.admission_checks
        }

    def refresh_references(
        self,
        flavors: dict[str, ResourceFlavor],
        checks: dict[str, AdmissionCheck],
        topologies: Container[str] = (),
    ) -> None:
        """Recompute what depends on other objects: label keys, missing flavors/checks."""
        groups = []
        by_resource: dict[str, ResourceGroupInfo] = {}
        missing: list[str] = []
        tas_flavors: dict[str, str] = {}
        all_tas = True
        for group in self.spec.resource_groups:
            keys: set[str] = set()
            for fq in group.flavors:
                flavor = flavors.get(fq.name)
                if flavor is None:
                    missing.append(fq.name)
                    all_tas = False
                else:
                    keys.update(flavor.node_labels)
                    if flavor.topology_name is not None:
                        tas_flavors[fq.name] = flavor.topology_name
                    else:
                        all_tas = False
            info = ResourceGroupInfo(
                covered=frozenset(group.covered_resources),
                flavors=tuple(fq.name for fq in group.flavors),
                label_keys=frozenset(keys),
            )
            groups.append(info)
            for res in group.covered_resources:
                by_resource.setdefault(res, info)
        self.groups = groups
        self.rg_by_resource = by_resource
        self.missing_flavors = missing
        self.tas_flavors = tas_flavors
        self.tas_only = all_tas and bool(tas_flavors)
        self.missing_topologies = [
            (topology, flavor)
            for flavor, topology in sorted(tas_flavors.items())
            if topology not in topologies
        ]
        names = [rule.name for rule in self.spec.admission_checks]
        self.multikueue = any(
            n in checks and checks[n].controller_name == MULTIKUEUE_CONTROLLER_NAME for n in names
        )
        self.missing_checks = [n for n in names if n not in checks]
        self.inactive_checks = [n for n in names if n in checks and not checks[n].active]
        self._inactive = self._work_out_inactive_reason()

    # ------------------------------------------------------------ activity
    @property
    def in_cycle(self) -> bool:
        """Whether the CQ's cohort ancestry loops (set by the engine after tree changes)."""
        return self._in_cycle

    @in_cycle.setter
    def in_cycle(self, value: bool) -> None:
        if value != self._in_cycle:
            self._in_cycle = value
            self._inactive = self._work_out_inactive_reason()

    @property
    def active(self) -> bool:
        return self._inactive is None

    @property
    def schedulable(self) -> bool:
        return self._inactive is None

    def inactive_reason(self) -> tuple[str, str] | None:
        """(reason, message) of an inactive CQ, as upstream words it; None when active."""
        return self._inactive

    def _work_out_inactive_reason(self) -> tuple[str, str] | None:
        if self.spec.terminating:
            return (
                QueueActiveReason.TERMINATING.value,
                "Can't admit new workloads; clusterQueue is terminating",
            )
        reasons: list[str] = []
        messages: list[str] = []
        if self.spec.stop_policy != StopPolicy.NONE:
            reasons.append(QueueActiveReason.STOPPED.value)
            messages.append("is stopped")
        if self.missing_flavors:
            reasons.append(QueueActiveReason.FLAVOR_NOT_FOUND.value)
            messages.append(
                f"references missing ResourceFlavor(s): {','.join(self.missing_flavors)}"
            )
        if self.missing_checks:
            reasons.append(QueueActiveReason.ADMISSION_CHECK_NOT_FOUND.value)
            messages.append(
                f"references missing AdmissionCheck(s): {','.join(self.missing_checks)}"
            )
        if self.inactive_checks:
            reasons.append(QueueActiveReason.ADMISSION_CHECK_INACTIVE.value)
            messages.append(
                f"references inactive AdmissionCheck(s): {','.join(self.inactive_checks)}"
            )
        if self._in_cycle:
            reasons.append(QueueActiveReason.COHORT_HAS_CYCLE.value)
            messages.append("is in a cohort tree with a cycle")
        for topology, flavor in self.missing_topologies:
            reasons.append(QueueActiveReason.TOPOLOGY_NOT_FOUND.value)
            messages.append(f'there is no Topology "{topology}" for TAS flavor "{flavor}"')
        if not reasons:
            return None
        return reasons[0], f"Can't admit new workloads: {', '.join(messages)}."


class LocalQueueState:
    __slots__ = ("key", "parked", "spec")

    def __init__(self, spec: LocalQueue) -> None:
        self.spec = spec
        self.key = spec.key
        # Pending workloads kept out of the ClusterQueue while this queue is held.
        self.parked: dict[str, WorkloadState] = {}

    @property
    def held(self) -> bool:
        return self.spec.stop_policy != StopPolicy.NONE


class ClusterState:
    """All objects the engine knows, plus the quota tree and the dirty-status set."""

    __slots__ = (
        "awaiting_cq",
        "checks",
        "clock",
        "config",
        "cqs",
        "dirty",
        "flavors",
        "group_epochs",
        "limit_ranges",
        "lqs",
        "namespace_defaults",
        "namespaces",
        "orphans",
        "priority_classes",
        "queues",
        "runtime_classes",
        "topology",
        "tree",
        "variants",
        "verdict_epoch",
        "workloads",
    )

    def __init__(self, config: EngineConfig, clock: Clock) -> None:
        self.config = config
        self.clock = clock
        self.flavors: dict[str, ResourceFlavor] = {}
        self.tree = QuotaTree()
        self.cqs: dict[str, ClusterQueueState] = {}
        self.lqs: dict[str, LocalQueueState] = {}
        self.namespaces: dict[str, Namespace] = {}
        self.checks: dict[str, AdmissionCheck] = {}
        self.priority_classes: dict[str, WorkloadPriorityClass] = {}
        # LimitRanges by namespace and name, and what each namespace's add up to.
        self.limit_ranges: dict[str, dict[str, LimitRange]] = {}
        self.namespace_defaults: dict[str, NamespaceDefaults] = {}
        self.runtime_classes: dict[str, RuntimeClass] = {}
        self.workloads: dict[str, WorkloadState] = {}
        # Parent workload key -> its concurrent-admission variants' keys.
        self.variants: dict[str, set[str]] = {}
        # Topologies, nodes, pods outside TAS and what TAS workloads hold per domain.
        self.topology = TopologyState()
        # Pending workloads whose LocalQueue does not exist (yet), by LocalQueue key.
        self.orphans: dict[str, dict[str, WorkloadState]] = {}
        # Workloads holding an admission in a ClusterQueue the engine does not know (yet):
        # charged as soon as that ClusterQueue appears (restart recovery in any order).
        self.awaiting_cq: dict[str, dict[str, WorkloadState]] = {}
        # Workloads whose status changed since the last drain.
        self.dirty: set[str] = set()
        # ClusterQueues with heads, and those a flush would change; their queues report.
        self.queues = QueueIndex(self._flush_group_of)
        # Move on every change that may alter a nomination verdict (`verdict_cache`):
        # anywhere (cluster objects), or within one flush group (quota and victims).
        self.verdict_epoch = 0
        self.group_epochs: dict[Hashable, int] = {}

    def now(self) -> float:
        return self.clock.now()

    def verdicts_may_change(self, cq: ClusterQueueState | None = None) -> None:
        """Kept verdicts expire: in cq's flush group (its quota or its admitted workloads
        changed; other cohort trees neither lend to it nor hold its victims), or, without
        cq, everywhere (a cluster object changed)."""
        if cq is None:
            self.verdict_epoch += 1
            return
        group = self._verdict_group(cq)
        self.group_epochs[group] = self.group_epochs.get(group, 0) + 1

    def verdict_stamp(self, cq: ClusterQueueState) -> tuple[int, int]:
        """What a verdict for a head of cq was reached under (see `verdicts_may_change`)."""
        return (self.verdict_epoch, self.group_epochs.get(self._verdict_group(cq), 0))

    @staticmethod
    def _verdict_group(cq: ClusterQueueState) -> Hashable:
        """The root of cq's cohort tree; where the parent chain loops (`in_cycle` may not
        be known yet while a queue is being re-attached), the node the loop closes at."""
        node = cq.node
        seen = {id(node)}
        while node.parent is not None and id(node.parent) not in seen:
            node = node.parent
            seen.add(id(node))
        return node

    def cq_of_lq(self, lq_key: str) -> ClusterQueueState | None:
        lq = self.lqs.get(lq_key)
        if lq is None:
            return None
        return self.cqs.get(lq.spec.cluster_queue)

    def defaults_of(self, namespace: str) -> NamespaceDefaults:
        """The LimitRange defaults that apply to pods of `namespace`."""
        return self.namespace_defaults.get(namespace, NO_DEFAULTS)

    def set_limit_ranges(self, namespace: str, ranges: dict[str, LimitRange]) -> None:
        if ranges:
            self.limit_ranges[namespace] = ranges
            self.namespace_defaults[namespace] = summarize(ranges.values())
        else:
            self.limit_ranges.pop(namespace, None)
            self.namespace_defaults.pop(namespace, None)

    def namespace_labels(self, namespace: str) -> dict[str, str] | None:
        ns = self.namespaces.get(namespace)
        return None if ns is None else dict(ns.labels)

    def flush_group(self, cq: ClusterQueueState) -> Hashable:
        """What a flush of cq reaches, named by a node: the cohort tree's root, or cq itself.

        The same ClusterQueues as `tree_cqs(cq)`.
        """
        node = cq.node
        if node.parent is None or cq.in_cycle:
            return node
        return node.root()

    def _flush_group_of(self, name: str) -> Hashable:
        cq = self.cqs.get(name)
        return None if cq is None else self.flush_group(cq)

    def tree_cqs(self, cq: ClusterQueueState) -> list[ClusterQueueState]:
        """Every ClusterQueue sharing cq's cohort tree (cq alone when it has no cohort)."""
        node = cq.node
        if node.parent is None or cq.in_cycle:
            return [cq]
        return [
            self.cqs[n.name] for n in node.root().subtree_cluster_queues() if n.name in self.cqs
        ]

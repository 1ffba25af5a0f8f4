"""Upstream's scheduler-perf generator format, parsed and expanded into a scenario.

The file format is the one upstream Kueue's performance runner reads
(``test/performance/scheduler/configs/*/generator.yaml``): cohort sets hold queue sets, queue
sets hold workload sets, workload sets hold workload templates. Keeping the format lets a user
run the same file against upstream and against the simulator and compare the figures.

Expansion follows the runner's naming and timing so the two outputs line up:

- cohort ``<cohortClass>-<i>``; ClusterQueue ``<cqClass>-<queueSetIdx>-<i>-<cohort>``, with a
  namespace and one LocalQueue of the same name; one flavor (``rf`` unless the file names one)
  with a CPU-only quota.
- each workload set of a queue runs on its own: it waits ``creationIntervalMs`` before *every*
  workload it creates, walking its templates ``count`` times, so its k-th workload (0-based)
  appears at ``(k + 1) * creationIntervalMs``. All queues start at the same instant.
- workload ``<class>-<workloadSetIdx>-<repeat>-<templateIdx>`` in the queue's namespace.

Topology-aware files (``configs/tas``) are simulated as upstream's runner sets them up: a
Topology of the file's levels, nodes for every combination of level values (``<level>-<i>``
labels, the last level's ``capacity`` as allocatable, 110 pods), the flavor selecting them by
``nodeLabel: tas``, and per workload one pod set of ``podCount`` pods with the request per
pod and ``tasConstraint`` at ``tasLevel``: ``required``, ``preferred``, or ``balanced``
(slices of ``sliceSize`` pods required in one domain of the level, as upstream's runner
builds it).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from core.engine.quantity import QuantityError, to_base_units

DEFAULT_FLAVOR_NAME = "rf"
"""Flavor name upstream's runner uses when the file does not name one."""

MAX_NODES = 20_000
RESOURCE_NAME = "cpu"
"""The one resource the generator format quotas and requests."""


class GeneratorConfigError(ValueError):
    """A generator file that cannot be simulated; the message names the offending field."""


class PreemptionPolicy(enum.StrEnum):
    """Values of ``reclaimWithinCohort`` / ``withinClusterQueue`` as upstream spells them."""

    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"
    LOWER_OR_NEWER_EQUAL_PRIORITY = "LowerOrNewerEqualPriority"
    ANY = "Any"


_Quantity = int | float | str


class WorkloadTemplate(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    """One workload shape of a workload set."""

    class_name: str
    runtime_ms: int = 0
    priority: int = 0
    request: _Quantity = 0
    pod_count: int = 0
    tas_constraint: str = ""
    tas_level: str = ""
    slice_size: int = 0


TAS_CONSTRAINTS = ("required", "preferred", "balanced")
DEFAULT_NODE_CPU = "96"
DEFAULT_NODE_MEMORY = "256Gi"
NODE_PODS = 110


class NodeCapacity(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    cpu: _Quantity = DEFAULT_NODE_CPU
    memory: _Quantity = DEFAULT_NODE_MEMORY


class TopologyLevelConfig(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    """One level: ``count`` domains per domain above, told apart by ``nodeLabel``."""

    name: str
    count: int
    node_label: str
    capacity: NodeCapacity | None = None


class TopologyConfig(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    name: str
    levels: list[TopologyLevelConfig] = msgspec.field(default_factory=list)


class WorkloadsSet(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    """A stream of workloads created one every ``creation_interval_ms``."""

    count: int
    creation_interval_ms: int = 0
    workloads: list[WorkloadTemplate] = msgspec.field(default_factory=list)


class QueuesSet(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    """``count`` identical ClusterQueues in one cohort, each fed by the same workload sets."""

    class_name: str
    count: int
    nominal_quota: _Quantity = 0
    borrowing_limit: _Quantity | None = None
    reclaim_within_cohort: PreemptionPolicy = PreemptionPolicy.NEVER
    within_cluster_queue: PreemptionPolicy = PreemptionPolicy.NEVER
    workloads_sets: list[WorkloadsSet] = msgspec.field(default_factory=list)


class CohortSet(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    """``count`` identical cohorts."""

    class_name: str
    count: int
    queues_sets: list[QueuesSet] = msgspec.field(default_factory=list)


class ResourceFlavorConfig(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    """The single flavor every generated ClusterQueue quotas."""

    name: str = DEFAULT_FLAVOR_NAME
    node_labels: dict[str, str] = msgspec.field(default_factory=dict)
    node_label: str = ""
    """Upstream's runner: the label key (value ``tas``) its TAS nodes carry."""
    topology_name: str = ""


class GeneratorConfig(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    """A whole generator file."""

    cohorts: list[CohortSet] = msgspec.field(default_factory=list)
    resource_flavor: ResourceFlavorConfig | None = None
    topology: TopologyConfig | None = None


@dataclass(frozen=True, slots=True)
class QueueSpec:
    """One generated ClusterQueue (and its same-named namespace and LocalQueue)."""

    name: str
    cohort: str
    class_name: str
    nominal_milli: int
    borrowing_limit_milli: int | None
    reclaim_within_cohort: PreemptionPolicy
    within_cluster_queue: PreemptionPolicy


@dataclass(frozen=True, slots=True)
class WorkloadArrival:
    """One generated workload and the virtual instant it is created."""

    seq: int
    """Position in generation order; the deterministic tie-break between equal times."""
    name: str
    namespace: str
    cluster_queue: str
    class_name: str
    created_ms: int
    runtime_ms: int
    priority: int
    request_milli: int
    """Per pod."""
    pod_count: int = 1
    tas_constraint: str = ""
    tas_level: str = ""
    slice_size: int = 0


@dataclass(frozen=True, slots=True)
class NodeSpec:
    name: str
    labels: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class TopologySpec:
    """The Topology, its nodes and their allocatable (engine units), and the flavor's
    node label that selects them."""

    name: str
    levels: tuple[str, ...]
    nodes: tuple[NodeSpec, ...]
    allocatable: tuple[tuple[str, int], ...]
    flavor_node_labels: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class Scenario:
    """Everything a generator file creates, in the order the simulator replays it."""

    flavor_name: str
    cohorts: tuple[str, ...]
    queues: tuple[QueueSpec, ...]
    arrivals: tuple[WorkloadArrival, ...]
    """Sorted by ``(created_ms, seq)``."""
    topology: TopologySpec | None = None


ConfigSource = Mapping[str, Any] | GeneratorConfig


def load_config(source: ConfigSource) -> GeneratorConfig:
    """Parse a generator mapping (parsed YAML), or pass an already built config through.

    Reading the file is the caller's job (`cli.simulate_command.read_generator_file`): the
    engine package does no I/O.
    """
    if isinstance(source, GeneratorConfig):
        config = source
    else:
        try:
            config = msgspec.convert(dict(source), GeneratorConfig)
        except msgspec.ValidationError as err:
            raise GeneratorConfigError(f"invalid generator config: {err}") from err
    _validate(config)
    return config


def expand(config: GeneratorConfig) -> Scenario:
    """Turn a config into the concrete queues and timed workload arrivals it describes."""
    _validate(config)
    flavor = config.resource_flavor.name if config.resource_flavor else DEFAULT_FLAVOR_NAME
    cohorts: list[str] = []
    queues: list[QueueSpec] = []
    arrivals: list[WorkloadArrival] = []
    for cohort_set in config.cohorts:
        for cohort_idx in range(cohort_set.count):
            cohort = f"{cohort_set.class_name}-{cohort_idx}"
            cohorts.append(cohort)
            for qs_idx, queue_set in enumerate(cohort_set.queues_sets):
                for q_idx in range(queue_set.count):
                    queue = _queue_spec(queue_set, cohort, qs_idx, q_idx)
                    queues.append(queue)
                    _append_arrivals(arrivals, queue, queue_set.workloads_sets)
    arrivals.sort(key=lambda a: (a.created_ms, a.seq))
    topology = _topology_spec(config)
    return Scenario(flavor, tuple(cohorts), tuple(queues), tuple(arrivals), topology)


def _topology_spec(config: GeneratorConfig) -> TopologySpec | None:
    """Upstream's runner's nodes: every combination of level values, named after them."""
    topology, flavor = config.topology, config.resource_flavor
    if topology is None or flavor is None:
        return None
    capacity = topology.levels[-1].capacity or NodeCapacity()
    allocatable = (
        ("cpu", to_base_units("cpu", capacity.cpu)),
        ("memory", to_base_units("memory", capacity.memory)),
        ("pods", NODE_PODS),
    )
    paths: list[list[str]] = [[]]
    for level in topology.levels:
        paths = [[*path, f"{level.name}-{i}"] for path in paths for i in range(level.count)]
    nodes = tuple(
        NodeSpec(
            name="node" + "".join(f"-{v[0]}{v.rsplit('-', 1)[1]}" for v in path),
            labels=(
                (flavor.node_label, "tas"),
                *(
                    (level.node_label, value)
                    for level, value in zip(topology.levels, path, strict=True)
                ),
            ),
        )
        for path in paths
    )
    return TopologySpec(
        name=topology.name,
        levels=tuple(level.node_label for level in topology.levels),
        nodes=nodes,
        allocatable=allocatable,
        flavor_node_labels=((flavor.node_label, "tas"),),
    )


def load_scenario(source: ConfigSource) -> Scenario:
    """``expand(load_config(source))``."""
    return expand(load_config(source))


def _validate(config: GeneratorConfig) -> None:
    if not config.cohorts:
        raise GeneratorConfigError("generator config must contain at least one cohort")
    tas = _validate_topology(config)
    for c_idx, cohort_set in enumerate(config.cohorts):
        where = f"cohorts[{c_idx}] ({cohort_set.class_name!r})"
        _require(cohort_set.count >= 0, f"{where}.count must be >= 0")
        for q_idx, queue_set in enumerate(cohort_set.queues_sets):
            _validate_queue_set(queue_set, f"{where}.queuesSets[{q_idx}]", tas)


def _validate_topology(config: GeneratorConfig) -> frozenset[str]:
    """The topology's level labels (none: not topology-aware); raises where the file's TAS
    parts do not fit together."""
    topology, flavor = config.topology, config.resource_flavor
    named = flavor is not None and bool(flavor.topology_name)
    if topology is None and not named:
        return frozenset()
    _require(topology is not None, "resourceFlavor.topologyName is set but there is no topology")
    _require(named, "topology is set but resourceFlavor.topologyName does not name it")
    assert topology is not None and flavor is not None
    _require(
        flavor.topology_name == topology.name,
        f"resourceFlavor.topologyName {flavor.topology_name!r} is not the topology's name"
        f" {topology.name!r}",
    )
    _require(bool(flavor.node_label), "resourceFlavor.nodeLabel is required with a topology")
    _require(len(topology.levels) >= 2, "topology must have at least 2 levels")
    for index, level in enumerate(topology.levels):
        where = f"topology.levels[{index}] ({level.name!r})"
        _require(level.count >= 1, f"{where}.count must be >= 1")
        _require(bool(level.node_label), f"{where}.nodeLabel is required")
        if level.capacity is not None:
            _require(
                index == len(topology.levels) - 1, f"{where}: only the last level has capacity"
            )
            for resource in ("cpu", "memory"):
                value = getattr(level.capacity, resource)
                try:
                    to_base_units(resource, value)
                except QuantityError as err:
                    raise GeneratorConfigError(f"{where}.capacity.{resource}: {err}") from err
    nodes = 1
    for level in topology.levels:
        nodes *= level.count
    _require(nodes <= MAX_NODES, f"topology makes {nodes} nodes, more than {MAX_NODES}")
    return frozenset(level.node_label for level in topology.levels)


def _validate_queue_set(queue_set: QueuesSet, where: str, tas: frozenset[str]) -> None:
    _require(queue_set.count >= 0, f"{where}.count must be >= 0")
    _quantity(queue_set.nominal_quota, f"{where}.nominalQuota")
    if queue_set.borrowing_limit is not None:
        _quantity(queue_set.borrowing_limit, f"{where}.borrowingLimit")
    for w_idx, wl_set in enumerate(queue_set.workloads_sets):
        set_where = f"{where}.workloadsSets[{w_idx}]"
        _require(wl_set.count >= 0, f"{set_where}.count must be >= 0")
        _require(wl_set.creation_interval_ms >= 0, f"{set_where}.creationIntervalMs must be >= 0")
        for t_idx, template in enumerate(wl_set.workloads):
            t_where = f"{set_where}.workloads[{t_idx}] ({template.class_name!r})"
            _require(template.runtime_ms >= 0, f"{t_where}.runtimeMs must be >= 0")
            _quantity(template.request, f"{t_where}.request")
            _require(template.pod_count >= 0, f"{t_where}.podCount must be >= 0")
            _require(template.slice_size >= 0, f"{t_where}.sliceSize must be >= 0")
            if template.tas_level or template.tas_constraint or template.slice_size:
                _require(bool(tas), f"{t_where}: a topology request needs a topology")
                _require(
                    template.tas_level in tas,
                    f"{t_where}.tasLevel {template.tas_level!r} is not a level of the topology",
                )
                _require(
                    template.tas_constraint in TAS_CONSTRAINTS,
                    f"{t_where}.tasConstraint must be one of {', '.join(TAS_CONSTRAINTS)}",
                )


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise GeneratorConfigError(message)


def _quantity(value: int | float | str, where: str) -> int:
    try:
        amount = to_milli(value)
    except QuantityError as err:
        raise GeneratorConfigError(f"{where}: {err}") from err
    _require(amount >= 0, f"{where}: quantity {value!r} is negative")
    return amount


def to_milli(value: int | float | str) -> int:
    """A CPU quantity of the file in milli-CPU, the engine's unit."""
    return to_base_units(RESOURCE_NAME, value)


def _queue_spec(queue_set: QueuesSet, cohort: str, qs_idx: int, q_idx: int) -> QueueSpec:
    borrowing = queue_set.borrowing_limit
    return QueueSpec(
        name=f"{queue_set.class_name}-{qs_idx}-{q_idx}-{cohort}",
        cohort=cohort,
        class_name=queue_set.class_name,
        nominal_milli=to_milli(queue_set.nominal_quota),
        borrowing_limit_milli=None if borrowing is None else to_milli(borrowing),
        reclaim_within_cohort=queue_set.reclaim_within_cohort,
        within_cluster_queue=queue_set.within_cluster_queue,
    )


def _append_arrivals(
    arrivals: list[WorkloadArrival], queue: QueueSpec, wl_sets: list[WorkloadsSet]
) -> None:
    for set_idx, wl_set in enumerate(wl_sets):
        step = 0
        for repeat in range(wl_set.count):
            for t_idx, template in enumerate(wl_set.workloads):
                step += 1
                arrivals.append(
                    WorkloadArrival(
                        seq=len(arrivals),
                        name=f"{template.class_name}-{set_idx}-{repeat}-{t_idx}",
                        namespace=queue.name,
                        cluster_queue=queue.name,
                        class_name=template.class_name,
                        created_ms=step * wl_set.creation_interval_ms,
                        runtime_ms=template.runtime_ms,
                        priority=template.priority,
                        request_milli=to_milli(template.request),
                        pod_count=template.pod_count or 1,
                        tas_constraint=template.tas_constraint,
                        tas_level=template.tas_level,
                        slice_size=template.slice_size,
                    )
                )

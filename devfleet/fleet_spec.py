"""The shape of a local fleet: which clusters exist and which fake nodes each one has.

A fleet description is a small YAML file (see `default-fleet.yaml`): a manager and a list
of workers, each with node groups (count, capacity, labels, taints). Node labels are what
ResourceFlavors match, so they are chosen to look like a real GPU fleet's.

A node group may also spread its nodes over topology domains, for topology-aware
scheduling: `topology` lists levels widest first, each a node label and how many
consecutive nodes share a value (`nodesPer`); node `i` gets `<prefix><i // nodesPer>`
(prefix: the level's `prefix`, default the label's last name part and a dash), e.g.
`{label: example.com/rack, nodesPer: 2}` puts nodes 0-1 in `rack-0`, 2-3 in `rack-1`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

DEFAULT_FLEET_FILE = Path(__file__).with_name("default-fleet.yaml")
MANAGER = "manager"


class FleetSpecError(ValueError):
    """The fleet description is malformed; the message names the offending entry."""


@dataclass(frozen=True)
class NodeGroup:
    """`count` identical kwok nodes."""

    name: str
    count: int
    capacity: dict[str, str]
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[dict[str, str], ...] = ()
    topology: tuple[TopologyLevelSpec, ...] = ()

    def labels_of(self, index: int) -> dict[str, str]:
        """Node `index`'s labels: the group's, plus its topology domain's values."""
        return {
            **self.labels,
            **{level.label: f"{level.prefix}{index // level.nodes_per}" for level in self.topology},
        }


@dataclass(frozen=True)
class TopologyLevelSpec:
    """One topology level of a node group: `nodes_per` consecutive nodes share a value."""

    label: str
    nodes_per: int
    prefix: str


@dataclass(frozen=True)
class ClusterSpec:
    name: str
    node_groups: tuple[NodeGroup, ...]

    @property
    def node_count(self) -> int:
        return sum(group.count for group in self.node_groups)


@dataclass(frozen=True)
class FleetSpec:
    manager: ClusterSpec
    workers: tuple[ClusterSpec, ...]

    @property
    def clusters(self) -> tuple[ClusterSpec, ...]:
        return (self.manager, *self.workers)

    def with_worker_count(self, count: int) -> FleetSpec:
        """Keep the first `count` workers; beyond the described ones, repeat the last shape."""
        if count < 0:
            raise FleetSpecError("--workers must be 0 or more")
        if not self.workers and count:
            raise FleetSpecError("the fleet description has no worker to repeat")
        workers = list(self.workers[:count])
        while len(workers) < count:
            template = self.workers[-1]
            workers.append(ClusterSpec(f"worker-{len(workers) + 1}", template.node_groups))
        return FleetSpec(self.manager, tuple(workers))


def _node_group(raw: Any, where: str) -> NodeGroup:
    if not isinstance(raw, dict):
        raise FleetSpecError(f"{where}: a node group must be a mapping")
    try:
        name = str(raw["name"])
        count = int(raw.get("count", 1))
        capacity = {str(k): str(v) for k, v in dict(raw["capacity"]).items()}
    except (KeyError, TypeError, ValueError) as exc:
        raise FleetSpecError(f"{where}: needs name, count and capacity ({exc})") from exc
    if count < 0:
        raise FleetSpecError(f"{where}.count must be >= 0")
    labels = {str(k): str(v) for k, v in dict(raw.get("labels") or {}).items()}
    taints = tuple(
        {str(k): str(v) for k, v in dict(taint).items()} for taint in raw.get("taints") or ()
    )
    topology = tuple(
        _topology_level(level, f"{where}.topology[{index}]")
        for index, level in enumerate(raw.get("topology") or ())
    )
    return NodeGroup(name, count, capacity, labels, taints, topology)


def _topology_level(raw: Any, where: str) -> TopologyLevelSpec:
    if not isinstance(raw, dict) or not raw.get("label"):
        raise FleetSpecError(f"{where}: a topology level needs a label")
    label = str(raw["label"])
    try:
        nodes_per = int(raw.get("nodesPer", 1))
    except (TypeError, ValueError) as exc:
        raise FleetSpecError(f"{where}.nodesPer must be a number ({exc})") from exc
    if nodes_per < 1:
        raise FleetSpecError(f"{where}.nodesPer must be >= 1")
    prefix = str(raw.get("prefix", label.rpartition("/")[2] + "-"))
    return TopologyLevelSpec(label, nodes_per, prefix)


def _cluster(raw: Any, name: str, where: str) -> ClusterSpec:
    if not isinstance(raw, dict):
        raise FleetSpecError(f"{where}: a cluster must be a mapping")
    groups = tuple(
        _node_group(group, f"{where}.nodeGroups[{index}]")
        for index, group in enumerate(raw.get("nodeGroups") or ())
    )
    return ClusterSpec(name, groups)


def parse_fleet_spec(data: Any) -> FleetSpec:
    if not isinstance(data, dict):
        raise FleetSpecError("a fleet description is a mapping with 'manager' and 'workers'")
    manager = _cluster(data.get("manager") or {}, MANAGER, "manager")
    workers: list[ClusterSpec] = []
    for index, raw in enumerate(data.get("workers") or ()):
        name = str((raw or {}).get("name") or f"worker-{index + 1}")
        if name == MANAGER or name in (w.name for w in workers):
            raise FleetSpecError(f"workers[{index}]: duplicate cluster name {name!r}")
        workers.append(_cluster(raw, name, f"workers[{index}]"))
    return FleetSpec(manager, tuple(workers))


def load_fleet_spec(path: Path | None = None) -> FleetSpec:
    source = path or DEFAULT_FLEET_FILE
    try:
        data = yaml.safe_load(source.read_text())
    except OSError as exc:
        raise FleetSpecError(f"cannot read fleet description {source}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise FleetSpecError(f"{source} is not valid YAML: {exc}") from exc
    return parse_fleet_spec(data)


def node_manifests(cluster: ClusterSpec) -> list[dict[str, Any]]:
    """Node objects for kwok to adopt (the annotation is kwok's ownership marker)."""
    nodes = []
    for group in cluster.node_groups:
        for index in range(group.count):
            name = f"{cluster.name}-{group.name}-{index}"
            labels = {
                "type": "kwok",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                **group.labels_of(index),
            }
            spec: dict[str, Any] = {}
            if group.taints:
                spec["taints"] = [dict(t) for t in group.taints]
            nodes.append(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {
                        "name": name,
                        "labels": labels,
                        "annotations": {"kwok.x-k8s.io/node": "fake"},
                    },
                    "spec": spec,
                    "status": {
                        "allocatable": dict(group.capacity),
                        "capacity": dict(group.capacity),
                    },
                }
            )
    return nodes

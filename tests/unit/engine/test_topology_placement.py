"""Topology placement in one flavor: the answers upstream Kueue's table cases expect.

Each case builds a small tree of nodes (block / rack / host), asks for pods with a
topology request and checks the domains chosen, or the reason nothing fits.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from core.engine.model import (
    Node,
    SliceLayer,
    Taint,
    Toleration,
    TopologyRequest,
)
from core.engine.topology_placement import PlacementRequest, TopologyPlacer, count_in
from core.engine.topology_tree import TopologyTree

BLOCK = "cloud.com/topology-block"
RACK = "cloud.com/topology-rack"
HOST = "kubernetes.io/hostname"
THREE = (BLOCK, RACK, HOST)
TWO = (BLOCK, RACK)
GI = 1 << 30


def node(
    name: str,
    cpu: float,
    *,
    block: str | None = None,
    rack: str | None = None,
    host: str | None = None,
    memory: int = GI,
    pods: int = 10,
    labels: dict[str, str] | None = None,
    taints: tuple[Taint, ...] = (),
    extra: dict[str, int] | None = None,
) -> Node:
    all_labels = dict(labels or {})
    for key, value in ((BLOCK, block), (RACK, rack), (HOST, host)):
        if value is not None:
            all_labels[key] = value
    allocatable = {"cpu": int(cpu * 1000), "memory": memory, "pods": pods, **(extra or {})}
    return Node(name=name, labels=all_labels, allocatable=allocatable, taints=taints)


def default_nodes() -> list[Node]:
    """Two blocks; b1 has one host in r1 and three in r2, b2 one small and one big host."""
    return [
        node("b1-r1-x3", 1, block="b1", rack="r1", host="x3"),
        node("b1-r2-x5", 1, block="b1", rack="r2", host="x5"),
        node("b1-r2-x1", 1, block="b1", rack="r2", host="x1"),
        node("b1-r2-x6", 1, block="b1", rack="r2", host="x6"),
        node("b2-r2-x2", 1, block="b2", rack="r1", host="x2"),
        node("b2-r2-x4", 2, block="b2", rack="r2", host="x4", memory=4 * GI, pods=40),
    ]


def scattered_nodes() -> list[Node]:
    return [
        node("b1-r1-x3", 4, block="b1", rack="r1", host="x3"),
        node("b1-r1-x5", 1, block="b1", rack="r1", host="x5"),
        node("b1-r1-x1", 1, block="b1", rack="r1", host="x1"),
        node("b2-r1-x6", 2, block="b2", rack="r1", host="x6"),
        node("b2-r1-x2", 1, block="b2", rack="r1", host="x2"),
    ]


def binary_tree_nodes() -> list[Node]:
    hosts = [("b1", "r1", "x3"), ("b1", "r1", "x5"), ("b1", "r2", "x1"), ("b1", "r2", "x6")]
    hosts += [("b2", "r1", "x2"), ("b2", "r1", "x4"), ("b2", "r2", "x7"), ("b2", "r2", "x8")]
    return [node(f"{b}-{r}-{x}", 1, block=b, rack=r, host=x) for b, r, x in hosts]


@dataclass
class Ask:
    count: int
    request: TopologyRequest | None
    cpu: int = 1000
    memory: int = 0
    name: str = "main"
    implied: bool = False
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()
    extra: dict[str, int] = field(default_factory=dict)

    def placement(self) -> PlacementRequest:
        per_pod = dict(self.extra)
        if self.cpu:
            per_pod["cpu"] = self.cpu
        if self.memory:
            per_pod["memory"] = self.memory
        return PlacementRequest(
            pod_set=self.name,
            count=self.count,
            per_pod=per_pod,
            request=self.request,
            implied=self.implied,
            node_selector=self.node_selector,
            tolerations=self.tolerations,
        )


def placer(nodes: list[Node], levels: tuple[str, ...]) -> TopologyPlacer:
    tree = TopologyTree(levels, nodes)
    free = {key: dict(leaf.capacity) for key, leaf in tree.leaves.items()}
    return TopologyPlacer("default", tree, free, {})


def place(nodes: list[Node], levels: tuple[str, ...], *asks: Ask) -> dict[str, list]:
    result = placer(nodes, levels).place([a.placement() for a in asks])
    assert result.ok, result.reason
    return {
        name: [(d.count, list(d.values)) for d in assignment.domains]
        for name, assignment in result.assignments.items()
    }


def reason(nodes: list[Node], levels: tuple[str, ...], *asks: Ask) -> str:
    result = placer(nodes, levels).place([a.placement() for a in asks])
    assert not result.ok
    return result.reason


def required(level: str, **kw: object) -> TopologyRequest:
    return TopologyRequest(required=level, **kw)  # type: ignore[arg-type]


def preferred(level: str, **kw: object) -> TopologyRequest:
    return TopologyRequest(preferred=level, **kw)  # type: ignore[arg-type]


UNCONSTRAINED = TopologyRequest(unconstrained=True)

PLACED = [
    pytest.param(
        [
            node("b1-r1-x3", 2, block="b1", rack="r1", host="x3"),
            node("b1-r2-x5", 2, block="b1", rack="r2", host="x5", pods=20),
            *[
                node(f"b1-r3-{x}", 1, block="b1", rack="r3", host=x)
                for x in ("x1", "x6", "x2", "x4")
            ],
        ],
        THREE,
        Ask(4, required(BLOCK)),
        [(1, ["x1"]), (1, ["x2"]), (1, ["x4"]), (1, ["x6"])],
        id="fewest racks before fewest nodes",
    ),
    pytest.param(
        [
            node("b1-r1-x3", 2, block="b1", rack="r1", host="x3"),
            node("b1-r1-x5", 1, block="b1", rack="r1", host="x5"),
            node("b1-r1-x1", 1, block="b1", rack="r1", host="x1"),
        ],
        THREE,
        Ask(2, required(BLOCK)),
        [(2, ["x3"])],
        id="the one node that takes every pod",
    ),
    pytest.param(
        scattered_nodes(),
        THREE,
        Ask(6, UNCONSTRAINED),
        [(1, ["x1"]), (1, ["x3"]), (1, ["x5"]), (1, ["x2"]), (2, ["x6"])],
        id="unconstrained fills the least free hosts first",
    ),
    pytest.param(
        scattered_nodes(),
        THREE,
        Ask(6, None, implied=True),
        [(1, ["x1"]), (1, ["x3"]), (1, ["x5"]), (1, ["x2"]), (2, ["x6"])],
        id="implied TAS behaves as unconstrained",
    ),
    pytest.param(
        default_nodes(), THREE, Ask(1, UNCONSTRAINED), [(1, ["x3"])], id="one unconstrained pod"
    ),
    pytest.param(
        binary_tree_nodes(),
        THREE,
        Ask(4, required(BLOCK)),
        [(1, ["x3"]), (1, ["x5"]), (1, ["x1"]), (1, ["x6"])],
        id="a block of one-pod hosts",
    ),
    pytest.param(default_nodes(), THREE, Ask(1, required(HOST)), [(1, ["x3"])], id="host required"),
    pytest.param(
        default_nodes(), TWO, Ask(1, required(RACK)), [(1, ["b1", "r1"])], id="rack, one pod"
    ),
    pytest.param(
        default_nodes(), TWO, Ask(3, required(RACK)), [(3, ["b1", "r2"])], id="rack, three pods"
    ),
    pytest.param(
        default_nodes(),
        TWO,
        Ask(2, required(RACK)),
        [(2, ["b2", "r2"])],
        id="best fit picks the rack with least to spare",
    ),
    pytest.param(
        default_nodes(),
        TWO,
        Ask(1, required(BLOCK)),
        [(1, ["b2", "r1"])],
        id="one pod in the tightest block and rack",
    ),
    pytest.param(
        default_nodes(),
        TWO,
        Ask(4, required(BLOCK)),
        [(1, ["b1", "r1"]), (3, ["b1", "r2"])],
        id="block required spreads over its racks",
    ),
    pytest.param(
        default_nodes(),
        TWO,
        Ask(4, required(RACK), cpu=0, memory=1024),
        [(4, ["b1", "r1"])],
        id="memory decides",
    ),
    pytest.param(
        default_nodes(),
        TWO,
        Ask(4, preferred(RACK)),
        [(1, ["b1", "r1"]), (3, ["b1", "r2"])],
        id="preferred rack climbs to a block",
    ),
    pytest.param(
        default_nodes(),
        TWO,
        Ask(6, preferred(RACK)),
        [(1, ["b1", "r1"]), (3, ["b1", "r2"]), (2, ["b2", "r2"])],
        id="preferred rack spreads over blocks when it must",
    ),
    pytest.param(
        default_nodes(),
        TWO,
        Ask(6, preferred(BLOCK)),
        [(1, ["b1", "r1"]), (3, ["b1", "r2"]), (2, ["b2", "r2"])],
        id="preferred block spreads over blocks when it must",
    ),
    pytest.param(
        [
            node("b1", 2, block="b1", pods=20),
            node("b2", 1, block="b2"),
            node("b3", 4, block="b3", pods=40),
        ],
        (BLOCK,),
        Ask(5, preferred(BLOCK)),
        [(1, ["b2"]), (4, ["b3"])],
        id="preferred: the biggest domain, then best fit for the rest",
    ),
    pytest.param(
        [node(f"b1-r1-{x}", 3, block="b1", rack="r1", host=x) for x in ("x3", "x5", "x1")],
        THREE,
        Ask(6, required(BLOCK, slices=(SliceLayer(level=HOST, size=2),))),
        [(2, ["x1"]), (2, ["x3"]), (2, ["x5"])],
        id="slices of two pods per host",
    ),
    pytest.param(
        default_nodes(),
        THREE,
        Ask(4, preferred(BLOCK, slices=(SliceLayer(level=RACK, size=2),))),
        [(1, ["x1"]), (1, ["x5"]), (2, ["x4"])],
        id="preferred block, rack slices",
    ),
    pytest.param(
        default_nodes(),
        THREE,
        Ask(4, TopologyRequest(slices=(SliceLayer(level=RACK, size=2),))),
        [(1, ["x1"]), (1, ["x5"]), (2, ["x4"])],
        id="slices only",
    ),
    pytest.param(
        scattered_nodes(),
        THREE,
        Ask(6, TopologyRequest(slices=(SliceLayer(level=HOST, size=2),))),
        [(4, ["x3"]), (2, ["x6"])],
        id="host slices over several blocks",
    ),
]


def one_rack(*cpus: tuple[str, float]) -> list[Node]:
    return [node(f"b1-r1-{x}", c, block="b1", rack="r1", host=x) for x, c in cpus]


def host_slices(size: int) -> tuple[SliceLayer, ...]:
    return (SliceLayer(level=HOST, size=size),)


PLACED += [
    pytest.param(
        one_rack(("x3", 6), ("x5", 5), ("x1", 4), ("x6", 2)),
        THREE,
        Ask(12, required(BLOCK, slices=host_slices(2))),
        [(4, ["x1"]), (6, ["x3"]), (2, ["x6"])],
        id="host slices: most free slices first, then a tight fit for the rest",
    ),
    pytest.param(
        one_rack(("x3", 3), ("x5", 2), ("x1", 2)),
        THREE,
        Ask(4, required(BLOCK, slices=host_slices(2))),
        [(2, ["x1"]), (2, ["x5"])],
        id="host slices: hosts that fit slices exactly",
    ),
    pytest.param(
        one_rack(("x3", 4), ("x5", 3), ("x1", 2)),
        THREE,
        Ask(6, required(BLOCK, slices=host_slices(2))),
        [(2, ["x1"]), (4, ["x3"])],
        id="host slices: the last domain is the tightest that still fits",
    ),
    pytest.param(
        [
            *one_rack(("x3", 3), ("x5", 3), ("x1", 3)),
            node("b2-r1-x6", 6, block="b2", rack="r1", host="x6"),
        ],
        THREE,
        Ask(12, preferred(BLOCK, slices=host_slices(3))),
        [(3, ["x1"]), (3, ["x3"]), (6, ["x6"])],
        id="host slices over two blocks when one is too small",
    ),
    pytest.param(
        [
            node("b1-r1-x1", 1, block="b1", rack="r1", host="x1"),
            node("b1-r1-x2", 4, block="b1", rack="r1", host="x2"),
            node("b1-r2-x3", 3, block="b1", rack="r2", host="x3"),
            node("b1-r2-x4", 4, block="b1", rack="r2", host="x4"),
        ],
        THREE,
        Ask(
            8,
            required(
                BLOCK, slices=(SliceLayer(level=RACK, size=4), SliceLayer(level=HOST, size=2))
            ),
        ),
        [(4, ["x2"]), (2, ["x3"]), (2, ["x4"])],
        id="rack slices of four made of host slices of two",
    ),
]


@pytest.mark.parametrize(("nodes", "levels", "ask", "want"), PLACED)
def test_placement(nodes: list[Node], levels: tuple[str, ...], ask: Ask, want: list) -> None:
    assert place(nodes, levels, ask)["main"] == want


NOT_PLACED = [
    pytest.param(
        default_nodes(),
        TWO,
        Ask(4, required(RACK)),
        'topology "default" allows to fit only 3 out of 4 pod(s)',
        id="no rack takes four pods",
    ),
    pytest.param(
        default_nodes(),
        TWO,
        Ask(1, required(BLOCK), cpu=4000),
        'topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 4; '
        'excluded: resource "cpu": 4',
        id="a pod bigger than any domain",
    ),
    pytest.param(
        default_nodes(),
        TWO,
        Ask(5, required(BLOCK)),
        'topology "default" allows to fit only 4 out of 5 pod(s)',
        id="no block takes five pods",
    ),
    pytest.param(
        default_nodes(),
        TWO,
        Ask(10, preferred(BLOCK)),
        'topology "default" allows to fit only 7 out of 10 pod(s)',
        id="preferred but the whole topology is too small",
    ),
    pytest.param(
        [
            node("b1-r1-x3", 3, block="b1", rack="r1", host="x3"),
            *[
                node(f"b1-{r}-{x}", 1, block="b1", rack=r, host=x)
                for r, x in (("r2", "x5"), ("r3", "x1"), ("r4", "x6"))
            ],
        ],
        THREE,
        Ask(6, required(BLOCK, slices=(SliceLayer(level=RACK, size=3),))),
        'topology "default" allows to fit only 1 out of 2 slice(s)',
        id="only one rack slice fits",
    ),
    pytest.param(
        default_nodes(),
        THREE,
        Ask(1, required(HOST, slices=(SliceLayer(level=BLOCK, size=1),))),
        "podset slice topology cloud.com/topology-block is above the podset topology "
        "kubernetes.io/hostname",
        id="slice level above a required host",
    ),
    pytest.param(
        default_nodes(),
        THREE,
        Ask(1, required(HOST, slices=(SliceLayer(level=HOST, size=0),))),
        "slice topology requested, but slice size not provided",
        id="slice size missing",
    ),
    pytest.param(
        default_nodes(),
        THREE,
        Ask(1, required(HOST, slices=(SliceLayer(level="no-such-level", size=1),))),
        "no requested topology level for slices: no-such-level",
        id="unknown slice level",
    ),
    pytest.param(
        [
            node("x1", 1, host="x1", taints=(Taint(key="key", value="value"),)),
            node("x2", 1, host="x2", labels={"zone": "zone-b"}),
            node("x3", 2, host="x3", labels={"zone": "zone-b"}),
            node("x4", 0.1, host="x4", labels={"zone": "zone-a"}),
        ],
        (HOST,),
        Ask(1, required(HOST), node_selector={"zone": "zone-a"}),
        'topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 4; excluded: '
        'nodeSelector: 2, resource "cpu": 1, taint "key=value:NoSchedule": 1',
        id="exclusions counted per reason",
    ),
    pytest.param(
        [node("x1", 0.5, host="x1", extra={"example.com/gpu": 0})],
        (HOST,),
        Ask(1, required(HOST), extra={"example.com/gpu": 1}),
        'topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 1; excluded: '
        'resource "cpu": 1',
        id="the limiting resource is named, ties by name",
    ),
]


NOT_PLACED += [
    pytest.param(
        [
            node(f"b1-{r}-{x}", 4, block="b1", rack=r, host=x)
            for r, x in (("r1", "x1"), ("r2", "x2"), ("r3", "x3"))
        ],
        THREE,
        Ask(
            12,
            required(
                BLOCK, slices=(SliceLayer(level=RACK, size=6), SliceLayer(level=HOST, size=2))
            ),
        ),
        'topology "default" doesn\'t allow to fit; 0/2 slice(s) fit on level '
        "cloud.com/topology-rack; 6/6 slice(s) fit on level kubernetes.io/hostname",
        id="enough host slices but no rack slice",
    ),
]


@pytest.mark.parametrize(("nodes", "levels", "ask", "want"), NOT_PLACED)
def test_no_placement(nodes: list[Node], levels: tuple[str, ...], ask: Ask, want: str) -> None:
    assert reason(nodes, levels, ask) == want


def test_tolerated_taint_lets_pods_land() -> None:
    tainted = [node("x1", 1, host="x1", taints=(Taint(key="key", value="value"),))]
    ask = Ask(1, required(HOST), tolerations=(Toleration(key="key", value="value"),))
    assert place(tainted, (HOST,), ask)["main"] == [(1, ["x1"])]


def test_pod_set_group_places_leader_with_workers() -> None:
    nodes = [
        node("b1", 2, block="b1", memory=2 * GI),
        node("b2", 5, block="b2"),
        node("b3", 2, block="b3"),
    ]
    group = {"group_name": "same"}
    got = place(
        nodes,
        (BLOCK,),
        Ask(1, required(BLOCK, **group), name="leader"),
        Ask(4, required(BLOCK, **group), name="workers"),
    )
    assert got == {"leader": [(1, ["b2"])], "workers": [(4, ["b2"])]}


def test_leader_goes_where_the_workers_fit_best() -> None:
    gpu = {"example.com/gpu": 1}
    hosts = [("b1", "r1", "x3", 2), ("b1", "r1", "x5", 2), ("b1", "r1", "x1", 2)]
    hosts += [("b2", "r4", "x6", 1), ("b2", "r5", "x2", 2), ("b2", "r6", "x4", 2)]
    nodes = [node(f"{b}-{r}-{x}", c, block=b, rack=r, host=x, extra=gpu) for b, r, x, c in hosts]
    group = {"group_name": "same"}
    got = place(
        nodes,
        THREE,
        Ask(1, required(BLOCK, **group), cpu=2000, name="leader"),
        Ask(2, required(BLOCK, **group), name="workers", extra=gpu),
    )
    # The leader takes a whole host's cpu, the workers one gpu host each, all in b1.
    assert got == {"leader": [(1, ["x1"])], "workers": [(1, ["x3"]), (1, ["x5"])]}


def test_pod_sets_of_one_workload_share_domains_without_double_counting() -> None:
    nodes = [node(f"b1-{r}", 10, block="b1", rack=r) for r in ("r1", "r2")]
    got = place(
        nodes,
        TWO,
        Ask(8, required(RACK), name="a"),
        Ask(3, required(RACK), name="b"),
    )
    # The first pod set leaves 2 cpus in its rack: the second needs the other one.
    assert got == {"a": [(8, ["b1", "r1"])], "b": [(3, ["b1", "r2"])]}


def test_usage_of_admitted_and_non_tas_pods_counts() -> None:
    nodes = [node("x1", 2, host="x1"), node("x2", 2, host="x2")]
    tree = TopologyTree((HOST,), nodes)
    free = {key: dict(leaf.capacity) for key, leaf in tree.leaves.items()}
    free["x1"]["cpu"] -= 1500  # a DaemonSet pod
    usage = {"x2": {"cpu": 1000, "pods": 1}}
    placed = TopologyPlacer("default", tree, free, usage)
    result = placed.place([Ask(1, required(HOST)).placement()])
    assert [(d.count, d.values) for d in result.assignments["main"].domains] == [(1, ("x2",))]
    result = placed.place([Ask(2, required(HOST)).placement()])
    assert not result.ok
    assert placed.place([Ask(2, required(HOST)).placement()], simulate_empty=True).ok


def test_count_in_clamps_overcommitted_capacity() -> None:
    assert count_in({"cpu": 1000, "pods": 1}, {"cpu": -500, "pods": 3}) == (0, "cpu")
    assert count_in({"cpu": 1000, "pods": 1}, {"cpu": 3000, "pods": 2}) == (2, "pods")


def test_nodes_without_every_level_label_are_left_out() -> None:
    from core.engine.topology_tree import node_matches_flavor

    assert not node_matches_flavor({RACK: "r1"}, {}, TWO)
    assert node_matches_flavor({BLOCK: "b", RACK: "r1", "pool": "a"}, {"pool": "a"}, TWO)
    assert not node_matches_flavor({BLOCK: "b", RACK: "r1"}, {"pool": "a"}, TWO)

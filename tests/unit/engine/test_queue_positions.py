"""The engine's queue positions, all at once, are the ones its pending lists number."""

from __future__ import annotations

from tests.unit.engine.test_priority_update import engine, workload


def test_queue_positions_are_the_pending_lists_positions() -> None:
    e = engine(cpu=2)
    for index, priority in enumerate((0, 3, 1, 3, 2)):
        e.add_workload(workload(f"w{index}", float(index), priority))
    expected = {
        f"{p.namespace}/{p.name}": p.position_in_cluster_queue
        for name in e.cluster_queue_names()
        for p in e.pending_workloads(name)
    }
    assert e.queue_positions() == expected
    # Highest priority first, the older first among equals.
    assert e.queue_positions() == {"ns/w1": 0, "ns/w3": 1, "ns/w4": 2, "ns/w2": 3, "ns/w0": 4}

"""Views are built once per change of their inputs, for every stream and request of them."""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

import pytest

from core.api.codec import decode
from core.api.worker_capacity import WorkerCapacity
from core.kube.informer import EventHandlers
from core.kube.object_store import ObjectStore
from core.manager.informer_set import Cache
from hub.dashboard.server import Dashboard
from hub.dashboard.source import ChangeCount, HubSource, ViewInput, WorkerSummary
from hub.dashboard.streams import (
    DEFAULT_TICK_SECONDS,
    TIMED_VIEWS,
    VIEW_INPUTS,
    SharedViews,
    ViewKey,
)
from hub.dashboard.views import VIEWS
from tests.unit.hub.dashboard.doubles import GrantsAuth, ListSource, RecordedActions

WORKLOADS: ViewKey = ("workloads", "", "")
QUEUES: ViewKey = ("queues", "", "")


@dataclass
class Inputs:
    """Change counts per input, and a clock, as the hub's caches and loop would give."""

    counts: dict[ViewInput, int] = field(default_factory=lambda: dict.fromkeys(ViewInput, 0))
    now: float = 1000.0
    built: list[ViewKey] = field(default_factory=list)

    def version(self, inputs: Iterable[ViewInput]) -> Hashable:
        return tuple(self.counts[i] for i in inputs)

    def build(self, key: ViewKey) -> dict[str, Any]:
        self.built.append(key)
        return {"view": key[0], "build": len(self.built)}

    def views(self, *, versioned: bool = True) -> SharedViews:
        return SharedViews(
            self.build,
            version=self.version if versioned else None,
            min_interval=0.5,
            clock=lambda: self.now,
        )


def test_a_view_is_not_rebuilt_while_its_inputs_do_not_change() -> None:
    inputs = Inputs()
    views = inputs.views()
    first = views.get(QUEUES)
    for _ in range(10):
        inputs.now += 0.6
        assert views.get(QUEUES) is first
    assert inputs.built == [QUEUES]


def test_one_change_is_one_build_however_many_streams_ask() -> None:
    inputs = Inputs()
    views = inputs.views()
    views.get(WORKLOADS)
    inputs.counts[ViewInput.WORKLOADS] += 1
    inputs.now += 0.6
    seen = {id(views.get(WORKLOADS)) for _ in range(5)}
    assert len(seen) == 1
    assert inputs.built == [WORKLOADS, WORKLOADS]
    assert views.get(WORKLOADS).body == {"view": "workloads", "build": 2}
    assert b'"build":2' in views.get(WORKLOADS).event


def test_a_change_to_what_another_view_reads_leaves_this_one_alone() -> None:
    inputs = Inputs()
    views = inputs.views()
    views.get(QUEUES)
    inputs.counts[ViewInput.WORKERS] += 1
    inputs.counts[ViewInput.WORKLOADS] += 1
    inputs.now += 0.6
    views.get(QUEUES)
    assert inputs.built == [QUEUES]
    inputs.counts[ViewInput.CLUSTER_QUEUES] += 1
    views.get(QUEUES)
    assert inputs.built == [QUEUES, QUEUES]


def test_views_showing_durations_are_rebuilt_each_tick_and_others_are_not() -> None:
    inputs = Inputs()
    views = inputs.views()
    views.get(WORKLOADS)
    views.get(QUEUES)
    inputs.now += DEFAULT_TICK_SECONDS
    views.get(WORKLOADS)
    views.get(QUEUES)
    assert inputs.built == [WORKLOADS, QUEUES, WORKLOADS]


def test_inputs_changing_fast_are_built_at_most_once_per_interval() -> None:
    inputs = Inputs()
    views = inputs.views()
    views.get(QUEUES)
    for _ in range(4):
        inputs.counts[ViewInput.CLUSTER_QUEUES] += 1
        inputs.now += 0.1
        views.get(QUEUES)
    assert len(inputs.built) == 1
    inputs.now += 0.2
    assert views.get(QUEUES).body == {"view": "queues", "build": 2}


def test_each_workload_and_namespace_is_a_build_of_its_own() -> None:
    inputs = Inputs()
    views = inputs.views()
    keys: list[ViewKey] = [("workload", "a", "x"), ("workload", "a", "y"), ("workloads", "a", "")]
    for key in keys * 2:
        views.get(key)
    assert inputs.built == keys


def test_without_a_version_every_interval_counts_as_a_change() -> None:
    inputs = Inputs()
    views = inputs.views(versioned=False)
    views.get(QUEUES)
    inputs.now += 0.1
    views.get(QUEUES)
    inputs.now += 0.5
    views.get(QUEUES)
    assert inputs.built == [QUEUES, QUEUES]


_READS = {
    "cluster_queues": ViewInput.CLUSTER_QUEUES,
    "local_queues": ViewInput.LOCAL_QUEUES,
    "cohorts": ViewInput.COHORTS,
    "resource_flavors": ViewInput.RESOURCE_FLAVORS,
    "workloads": ViewInput.WORKLOADS,
    "workload": ViewInput.WORKLOADS,
    "queue_positions": ViewInput.WORKLOADS,
    "workers": ViewInput.WORKERS,
}


class RecordingSource(ListSource):
    """A ListSource that notes which inputs were read."""

    read: set[ViewInput]

    def __getattribute__(self, name: str) -> Any:
        if name in _READS:
            object.__getattribute__(self, "read").add(_READS[name])
        return object.__getattribute__(self, name)


@pytest.mark.parametrize("view", VIEWS)
def test_every_input_a_view_reads_is_one_it_is_rebuilt_for(view: str) -> None:
    report = decode(
        WorkerCapacity,
        {
            "metadata": {"name": "w1"},
            "spec": {"clusterName": "w1"},
            "status": {"flavors": [{"name": "f", "nodeCount": 1}]},
        },
    )
    source = RecordingSource(
        cqs=[{"metadata": {"name": "cq"}, "spec": {}}],
        lqs=[{"metadata": {"namespace": "a", "name": "lq"}, "spec": {"clusterQueue": "cq"}}],
        cohort_list=[{"metadata": {"name": "c"}, "spec": {}}],
        flavors=[{"metadata": {"name": "f"}, "spec": {}}],
        wls=[{"metadata": {"namespace": "a", "name": "x", "uid": "u"}, "spec": {}}],
        worker_list=[WorkerSummary("w1", True, "Active", "", None, report)],
    )
    source.read = set()
    dashboard = Dashboard(
        source, GrantsAuth(), RecordedActions(), now=lambda: datetime(2026, 1, 1, tzinfo=UTC)
    )
    dashboard.build(view, "a", "x")
    assert source.read <= set(VIEW_INPUTS[view])
    # The history reads only its sampler's rings, rebuilt on the tick (TIMED_VIEWS).
    assert source.read or (view == "history" and view in TIMED_VIEWS)


@dataclass
class FakeCache:
    """A cache that announces changes to its handlers, as an informer does."""

    handlers: list[EventHandlers[Any]] = field(default_factory=list)
    store: ObjectStore[dict[str, Any]] = field(default_factory=ObjectStore)

    def add_handlers(self, handlers: EventHandlers[Any]) -> None:
        self.handlers.append(handlers)

    def change(self, obj: dict[str, Any]) -> None:
        for handlers in self.handlers:
            assert handlers.on_update is not None
            handlers.on_update(obj, obj)


def test_change_counts_move_with_every_event_of_their_cache() -> None:
    cache = FakeCache()
    count = ChangeCount(cache)
    cache.change({})
    cache.change({})
    for handlers in cache.handlers:
        assert handlers.on_add is not None and handlers.on_delete is not None
        handlers.on_add({})
        handlers.on_delete({})
    assert count.count == 4


def test_the_hub_source_version_moves_only_with_the_inputs_asked_about() -> None:
    caches = {name: FakeCache() for name in ("cqs", "lqs", "cohorts", "flavors", "wls")}
    workers = [WorkerSummary("w1", True, "Active", "", None, None)]
    source = HubSource(
        cluster_queues=cast(Cache, caches["cqs"]),
        local_queues=cast(Cache, caches["lqs"]),
        cohorts=cast(Cache, caches["cohorts"]),
        resource_flavors=cast(Cache, caches["flavors"]),
        workloads=cast(Cache, caches["wls"]),
        workload_priority_values={},
        engine=cast(Any, None),
        workers=lambda: workers,
    )
    queues = (ViewInput.CLUSTER_QUEUES, ViewInput.LOCAL_QUEUES)
    fleet = (ViewInput.WORKERS, ViewInput.WORKLOADS)
    before = (source.version(queues), source.version(fleet))
    caches["wls"].change({})
    assert source.version(queues) == before[0]
    assert source.version(fleet) != before[1]
    after_workload = source.version(fleet)
    workers[0] = WorkerSummary("w1", False, "Disconnected", "timeout", None, None)
    assert source.version(fleet) != after_workload
    caches["lqs"].change({})
    assert source.version(queues) != before[0]

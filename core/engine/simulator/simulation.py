"""A discrete-event run of the real engine on a virtual clock.

The simulation replays a generator scenario against ``core.engine.Engine``: it creates the
queues, creates each workload at its creation time, runs scheduling cycles the way the
manager's scheduling thread would, lets each admitted workload run for its ``runtimeMs``
(counted from when the runner sees it ``Admitted``, as upstream's runner does), completes
evictions of preempted workloads (which the engine then requeues), and records upstream's
summary figures. How long the manager takes for each step is the ``ManagerModel``'s
business (see ``manager_model``); this module only orders the consequences in time.

Nothing here reads the wall clock or does I/O: the same scenario and model always give the
same summary.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from core.engine.clock import ManualClock
from core.engine.config import EngineConfig
from core.engine.engine import Engine
from core.engine.model import CycleResult
from core.engine.simulator.engine_objects import arrival_key, install_queues, workload
from core.engine.simulator.event_queue import Event, EventKind, EventQueue
from core.engine.simulator.generator import (
    RESOURCE_NAME,
    ConfigSource,
    Scenario,
    WorkloadArrival,
    load_scenario,
)
from core.engine.simulator.manager_model import ManagerModel
from core.engine.simulator.recorder import Recorder
from core.engine.simulator.summary import SimulationSummary
from core.engine.simulator.write_budget import WriteBudget


class _LoopState(Enum):
    """What the scheduling thread is doing between cycles."""

    IDLE = "idle"
    """Blocked waiting for heads; the next change starts a cycle."""
    SCHEDULED = "scheduled"
    """A CYCLE event is on the agenda."""


@dataclass(slots=True)
class _Tracked:
    """The simulator's own view of one workload (what runner and cache know of it)."""

    arrival: WorkloadArrival
    epoch: int = 0
    """Bumped on every admission and eviction; events of older epochs are stale."""
    cluster_queue: str = ""
    usage_milli: int = 0
    """CPU the workload holds in its ClusterQueue right now."""
    finish_sent_s: float | None = None
    """When the runner marked the current admission Finished, once it has."""


class Simulation:
    """One run: owns the engine, the agenda, the write budget and the recorder."""

    def __init__(
        self,
        scenario: Scenario,
        *,
        model: ManagerModel | None = None,
        engine_config: EngineConfig | None = None,
        until_s: float | None = None,
    ) -> None:
        self.scenario = scenario
        self.model = model or ManagerModel.upstream_like()
        self.clock = ManualClock()
        config = engine_config or EngineConfig(release_quota_on_eviction=False)
        self.engine = Engine(config, self.clock)
        self.until_s = until_s
        self._agenda = EventQueue()
        self._budget = WriteBudget(self.model.api_qps, self.model.api_burst)
        self._recorder = Recorder(scenario.queues, scenario.arrivals)
        self._tracked: dict[str, _Tracked] = {}
        self._next_arrival = 0
        self._loop = _LoopState.IDLE
        self._not_before = 0.0
        self._backoff = 0.0
        self._timer_at: float | None = None
        self._last_tick_s = -1.0
        self._finished = 0
        self._last_finish_s = 0.0
        self.cycles = 0
        self.admissions = 0
        self.preemptions = 0

    # ------------------------------------------------------------------ driving
    def run(self) -> SimulationSummary:
        """Play the scenario to the end (or to ``until_s``) and summarise it."""
        install_queues(self.engine, self.scenario)
        total = len(self.scenario.arrivals)
        now = 0.0
        while self._finished < total:
            event = self._next_event()
            if event is None or (self.until_s is not None and event.at > self.until_s):
                break
            now = event.at
            self.clock.set(now)
            self._handle(event)
            self._arm_timer(now)
        end = self._last_finish_s if self._finished == total else max(now, self._last_finish_s)
        return self._recorder.summary(
            model=self.model.name,
            end_s=end,
            cycles=self.cycles,
            admissions=self.admissions,
            preemptions=self.preemptions,
            api_writes=self._budget.granted,
        )

    def _next_event(self) -> Event | None:
        arrivals = self.scenario.arrivals
        if self._next_arrival < len(arrivals):
            arrival = arrivals[self._next_arrival]
            seen_at = arrival.created_ms / 1000.0 + self.model.watch_latency_s
            head = self._agenda.peek_time()
            if head is None or seen_at <= head:
                self._next_arrival += 1
                key = arrival_key(arrival)
                self._tracked[key] = _Tracked(arrival)
                return Event(seen_at, EventKind.CREATED, key)
        if len(self._agenda) == 0:
            return None
        return self._agenda.pop()

    def _handle(self, event: Event) -> None:
        match event.kind:
            case EventKind.CREATED:
                self._on_created(event)
            case EventKind.FINISHED:
                self._on_finished(event)
            case EventKind.EVICTION_DONE:
                self._on_eviction_done(event)
            case EventKind.ADMITTED_SEEN:
                self._on_admitted_seen(event)
            case EventKind.TIMER:
                self._on_timer(event)
            case EventKind.CYCLE:
                self._on_cycle(event.at)

    # ------------------------------------------------------------------ world events
    def _on_created(self, event: Event) -> None:
        arrival = self._tracked[event.key].arrival
        self._recorder.created(event.key, arrival.class_name, arrival.created_ms / 1000.0)
        self._charge_background(self.engine.add_workload(workload(arrival)), event.at)
        self._wake(event.at)

    def _on_admitted_seen(self, event: Event) -> None:
        tracked = self._tracked[event.key]
        if event.epoch != tracked.epoch:
            return
        self._recorder.admitted(event.key, event.at)
        finish_sent = event.at + tracked.arrival.runtime_ms / 1000.0
        tracked.finish_sent_s = finish_sent
        seen = finish_sent + self.model.propagation_s
        self._agenda.push(Event(seen, EventKind.FINISHED, event.key, tracked.epoch))

    def _on_finished(self, event: Event) -> None:
        tracked = self._tracked[event.key]
        if event.epoch != tracked.epoch:
            return
        self.engine.finish(event.key)
        self._release(tracked, event.at)
        tracked.epoch += 1
        self._recorder.finished(event.key, event.at)
        self._finished += 1
        self._last_finish_s = event.at
        self._wake(event.at)

    def _on_eviction_done(self, event: Event) -> None:
        tracked = self._tracked[event.key]
        if event.epoch != tracked.epoch:
            return
        changes = self.engine.complete_eviction(event.key)
        self._release(tracked, event.at)
        self._charge_background(changes, event.at)
        self._wake(event.at)

    def _on_timer(self, event: Event) -> None:
        self._timer_at = None
        self._last_tick_s = event.at
        self._charge_background(self.engine.tick(), event.at)
        self._wake(event.at)

    def _release(self, tracked: _Tracked, now: float) -> None:
        if tracked.usage_milli:
            self._recorder.usage_changed(tracked.cluster_queue, -tracked.usage_milli, now)
            tracked.usage_milli = 0

    # ------------------------------------------------------------------ scheduling thread
    def _wake(self, now: float) -> None:
        """Something changed: a blocked scheduling thread starts a cycle (after its backoff)."""
        if self._loop is _LoopState.IDLE:
            self._loop = _LoopState.SCHEDULED
            self._agenda.push(Event(max(now, self._not_before), EventKind.CYCLE))

    def _on_cycle(self, now: float) -> None:
        self._loop = _LoopState.IDLE
        result = self.engine.schedule()
        if result.heads == 0:
            self._not_before = now
            return
        self.cycles += 1
        end = self._apply_cycle(result, now)
        progressed = bool(result.admitted or result.preempted)
        if progressed:
            self._backoff = 0.0
            self._not_before = end
            if self.engine.has_queued_work():
                self._loop = _LoopState.SCHEDULED
                self._agenda.push(Event(end, EventKind.CYCLE))
        else:
            # Upstream backs off and retries; with nothing changed a retry decides the
            # same, so the thread parks until the next change, no earlier than the backoff.
            self._backoff = self.model.next_backoff(self._backoff)
            self._not_before = end + self._backoff

    def _apply_cycle(self, result: CycleResult, now: float) -> float:
        """Book the cycle's consequences; return when the scheduling thread is free again."""
        model = self.model
        cursor = now + model.cycle_cost(result.heads)
        written: set[str] = set()
        for admitted in result.admitted:
            written.add(admitted.key)
            self.admissions += 1
            tracked = self._tracked[admitted.key]
            tracked.epoch += 1
            tracked.finish_sent_s = None
            tracked.cluster_queue = admitted.admission.cluster_queue
            tracked.usage_milli = sum(
                psa.resource_usage.get(RESOURCE_NAME, 0)
                for psa in admitted.admission.pod_set_assignments
            )
            self._recorder.usage_changed(tracked.cluster_queue, tracked.usage_milli, now)
            grant = self._budget.acquire(cursor)  # sent in the background
            seen = grant + model.propagation_s
            self._agenda.push(Event(seen, EventKind.ADMITTED_SEEN, admitted.key, tracked.epoch))
        victims_done = cursor
        for record in result.preempted:
            if record.victim in written:
                continue
            written.add(record.victim)
            grant = self._budget.acquire(cursor)  # sent in parallel, waited for
            victims_done = max(victims_done, grant + model.write_latency_s)
            self._evict(record.victim, grant, now)
        cursor = victims_done
        for key in result.changed:
            if key not in written:
                cursor = self._budget.acquire(cursor) + model.write_latency_s
        return cursor

    def _evict(self, key: str, grant: float, now: float) -> None:
        self.preemptions += 1
        self._recorder.evicted(key)
        tracked = self._tracked[key]
        if tracked.finish_sent_s is not None and tracked.finish_sent_s <= now:
            return  # the runner already finished it; the pending FINISHED event wins
        tracked.epoch += 1
        if self.engine.config.release_quota_on_eviction:
            self._release(tracked, now)  # the engine already gave the quota back
            return
        # The runner sees the eviction, clears the reservation, the manager sees that.
        done = grant + 2 * self.model.propagation_s
        self._agenda.push(Event(done, EventKind.EVICTION_DONE, key, tracked.epoch))

    # ------------------------------------------------------------------ helpers
    def _charge_background(self, changes: Mapping[str, object], now: float) -> None:
        """Manager status writes that nothing waits for still use the API budget."""
        for _ in changes:
            self._budget.acquire(now)

    def _arm_timer(self, now: float) -> None:
        due = self.engine.next_timer()
        if due is None:
            return
        at = max(due, now)
        if at <= self._last_tick_s:
            return  # ticked at this instant already; a timer still due waits for the next event
        if self._timer_at is None or at < self._timer_at:
            self._timer_at = at
            self._agenda.push(Event(at, EventKind.TIMER))


def run_simulation(
    config: ConfigSource | Scenario,
    *,
    model: ManagerModel | None = None,
    engine_config: EngineConfig | None = None,
    until_s: float | None = None,
) -> SimulationSummary:
    """Simulate a generator config (mapping, parsed config or expanded scenario)."""
    scenario = config if isinstance(config, Scenario) else load_scenario(config)
    simulation = Simulation(scenario, model=model, engine_config=engine_config, until_s=until_s)
    return simulation.run()

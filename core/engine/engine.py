"""The engine facade: the one object a controller or the simulator drives.

Call protocol
-------------
1. Construct `Engine(config, clock)`. Everything is synchronous and pure: no call does I/O
   or reads the wall clock except through `clock.now()`.
2. Feed the cluster's objects with `upsert_*` / `delete_*` (ResourceFlavor, Cohort,
   ClusterQueue, LocalQueue, WorkloadPriorityClass, AdmissionCheck, Namespace, and the
   LimitRanges and RuntimeClasses that pods' requests depend on) in any order; objects may
   refer to objects that do not exist yet (the CQ/LQ is inactive until they do). For
   topology-aware scheduling also Topologies, Nodes and the pods TAS did not place
   (`upsert_topology`, `upsert_node`, `upsert_non_tas_pod` and their deletes).
3. Feed workloads with `add_workload` / `update_workload` / `delete_workload`. A workload
   whose `status.admission` is set is adopted as already holding quota (restart recovery).
4. Call `schedule()` whenever something changed (or in a loop): it runs one scheduling
   cycle and returns a `CycleResult`: admitted workloads with their Admission, preempted
   victims with reason and message, and the new status of every workload it changed.
5. Report what happens to admitted workloads with the lifecycle calls (`finish`, `evict`,
   `set_pods_ready`, `set_admission_check_state`, `set_reclaimable_pods`, `deactivate`,
   `reactivate`). Each returns the workloads whose status changed, keyed by workload key.
6. Timers (requeue backoff, PodsReady timeouts, maximum execution time) fire in `tick()`;
   `next_timer()` says when the earliest one is due so a driver can sleep exactly that long.
7. Query status at any time: `workload_status`, `cluster_queue_status`,
   `local_queue_status`, `cohort_status`, `pending_workloads*` (visibility API positions).

Workloads are addressed by key `"namespace/name"`; LocalQueues by (namespace, name).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from core.api.admission_check import CheckState
from core.api.cluster_queue import ClusterQueueConditionType, QueueActiveReason
from core.api.local_queue import LocalQueueConditionType
from core.api.workload_conditions import WorkloadReason
from core.engine import concurrent_admission, variant_family
from core.engine.clock import Clock, ManualClock
from core.engine.cluster_state import (
    ClusterQueueState,
    ClusterState,
    LocalQueueState,
    quotas_of,
)
from core.engine.config import EngineConfig
from core.engine.fair_sharing import dominant_resource_share
from core.engine.lifecycle import Lifecycle, tas_usage_from_admission
from core.engine.model import (
    AdmissionCheck,
    ClusterQueue,
    ClusterQueueStatus,
    Cohort,
    CohortFigures,
    CohortStatus,
    Condition,
    CycleResult,
    FlavorResourceUsage,
    LocalQueue,
    LocalQueueStatus,
    Namespace,
    Node,
    PendingWorkload,
    ResourceFlavor,
    StopPolicy,
    Topology,
    Workload,
    WorkloadPriorityClass,
    WorkloadStatus,
)
from core.engine.preemption import Preemptor
from core.engine.queueing import dequeue, enqueue, flush_all, flush_inadmissible, mark_pending
from core.engine.quota_tree import FlavorResource, Quota
from core.engine.resource_defaults import (
    LimitRange,
    RuntimeClass,
    adjusted_requests,
    needs_adjusting,
)
from core.engine.scheduling_cycle import SchedulingCycle
from core.engine.timers import Timers
from core.engine.topology_assigner import tas_implied
from core.engine.topology_replacement import replace_node
from core.engine.verdict_cache import VerdictCache
from core.engine.workload_state import (
    QUOTA_RESERVED,
    Where,
    WorkloadState,
)

StatusChanges = dict[str, WorkloadStatus]

__all__ = ["Clock", "Engine", "EngineConfig", "ManualClock", "StatusChanges"]

_INADMISSIBLE = "Inadmissible"


class Engine:
    """Kueue-compatible queueing and admission for one set of queues (one cluster's worth)."""

    def __init__(self, config: EngineConfig | None = None, clock: Clock | None = None) -> None:
        self.config = config or EngineConfig()
        self.clock: Clock = clock or ManualClock()
        self._state = ClusterState(self.config, self.clock)
        self._timers = Timers()
        self._life = Lifecycle(self._state, self._timers)
        self._preemptor = Preemptor(self._state)
        self._verdicts = VerdictCache()

    # ----------------------------------------------------------------- helpers
    def _drain(self) -> StatusChanges:
        state = self._state
        if not state.dirty:
            return {}
        if state.config.concurrent_admission:
            variant_family.settle(state, self._life)
        out: StatusChanges = {}
        for key in sorted(state.dirty):
            ws = state.workloads.get(key)
            if ws is not None:
                out[key] = ws.status()
        state.dirty.clear()
        return out

    def _link_variant(self, ws: WorkloadState, was_variant_of: str | None) -> None:
        """Keep `state.variants` (parent -> its concurrent-admission variants) current."""
        parent = ws.spec.variant_of
        if was_variant_of != parent:
            self._unlink_variant(ws.key, was_variant_of)
        if parent is not None:
            siblings = self._state.variants.setdefault(parent, set())
            if ws.key not in siblings:
                siblings.add(ws.key)
                self._state.dirty.add(parent)  # a new variant: settle its family

    def _unlink_variant(self, key: str, parent: str | None) -> None:
        if parent is None:
            return
        siblings = self._state.variants.get(parent)
        if siblings is not None:
            siblings.discard(key)
            if not siblings:
                del self._state.variants[parent]

    def _ws(self, key: str) -> WorkloadState:
        ws = self._state.workloads.get(key)
        if ws is None:
            raise KeyError(f"unknown workload {key!r}")
        return ws

    def _refresh_cycles(self) -> None:
        """After any change to the quota tree: cohort cycles and flush groups may differ."""
        state = self._state
        tree = state.tree
        for cq in state.cqs.values():
            parent = cq.node.parent
            cq.in_cycle = parent is not None and parent.name in tree.cycle_roots
        state.queues.tree_changed()

    def _refresh_references(self) -> None:
        state = self._state
        for cq in state.cqs.values():
            before = cq.active
            cq.refresh_references(state.flavors, state.checks, state.topology.topologies)
            self._after_activity_change(cq, before)

    def _after_activity_change(self, cq: ClusterQueueState, was_active: bool) -> None:
        state = self._state
        if was_active and not cq.active:
            for ws in list(cq.queue.heap_workloads()) + list(cq.queue.inadmissible.values()):
                mark_pending(state, ws, _INADMISSIBLE, f"ClusterQueue {cq.name} is inactive")

    def _counted_requests(self, ws: WorkloadState) -> list[dict[str, int]]:
        """Per-pod requests of ws's pod sets with its namespace's defaults applied."""
        state = self._state
        defaults = state.defaults_of(ws.spec.namespace)
        classes = state.runtime_classes
        return [
            adjusted_requests(ps.resources, defaults, classes)
            if ps.resources is not None and needs_adjusting(ps.resources, defaults, classes)
            else dict(ps.requests)
            for ps in ws.spec.pod_sets
        ]

    def _count_requests(self, ws: WorkloadState) -> None:
        ws.requests = self._counted_requests(ws)
        ws.refresh_pod_sets()

    def _recount(self, namespace: str | None = None, runtime_class: str | None = None) -> None:
        """Defaults changed: count again the workloads they may apply to (of `namespace`,
        or naming `runtime_class`). Only waiting ones move: a workload holding quota keeps
        what it was admitted with, and is counted anew if it is ever requeued."""
        state = self._state
        for ws in list(state.workloads.values()):
            if namespace is not None and ws.spec.namespace != namespace:
                continue
            if runtime_class is not None and not any(
                ps.resources is not None and ps.resources.get("runtimeClassName") == runtime_class
                for ps in ws.spec.pod_sets
            ):
                continue
            if ws.set_requests(self._counted_requests(ws)):
                ws.last_assignment = None
                if ws.where != Where.NOWHERE:
                    enqueue(state, ws)

    def _lq_pending(self, lq_key: str) -> list[WorkloadState]:
        state = self._state
        out: list[WorkloadState] = []
        lq = state.lqs.get(lq_key)
        if lq is not None:
            out.extend(lq.parked.values())
            cq = state.cqs.get(lq.spec.cluster_queue)
            if cq is not None:
                out.extend(ws for ws in cq.queue.heap_workloads() if ws.lq_key == lq_key)
                out.extend(ws for ws in cq.queue.inadmissible.values() if ws.lq_key == lq_key)
        out.extend(state.orphans.get(lq_key, {}).values())
        return out

    def _lq_pending_counts(self, lq_key: str) -> tuple[int, int]:
        """(pending, of them inadmissible in the ClusterQueue) for a LocalQueue, from the
        queues' running counts: `len(_lq_pending(key))` without a scan of the ClusterQueue."""
        state = self._state
        pending = len(state.orphans.get(lq_key, ()))
        stuck = 0
        lq = state.lqs.get(lq_key)
        if lq is not None:
            pending += len(lq.parked)
            cq = state.cqs.get(lq.spec.cluster_queue)
            if cq is not None:
                queued, stuck = cq.queue.count_of(lq_key)
                pending += queued + stuck
        return pending, stuck

    def _stop_reserving(
        self,
        workloads: Iterable[WorkloadState],
        drain: bool,
        evict_reason: str,
        evict_msg: str,
        unset_msg: str,
    ) -> None:
        """A queue was stopped: drain admitted workloads, unreserve the not-yet-admitted."""
        state = self._state
        for ws in sorted(workloads, key=lambda w: w.key):
            if ws.is_finished or ws.is_evicted:
                continue
            if ws.is_admitted:
                if drain:
                    self._life.evict(ws, evict_reason, evict_msg)
                continue
            cq = self._life.release(ws)
            mark_pending(state, ws, _INADMISSIBLE, unset_msg)
            if cq is not None:
                flush_inadmissible(state, cq)
            enqueue(state, ws)

    # ----------------------------------------------------------------- cluster objects
    def upsert_resource_flavor(self, flavor: ResourceFlavor) -> None:
        self._state.verdicts_may_change()
        self._state.flavors[flavor.name] = flavor
        self._state.topology.flavor_changed(flavor.name)
        self._refresh_references()
        flush_all(self._state)

    def delete_resource_flavor(self, name: str) -> None:
        self._state.verdicts_may_change()
        if self._state.flavors.pop(name, None) is not None:
            self._state.topology.flavor_changed(name)
            self._refresh_references()

    # ----------------------------------------------------------------- topology inputs
    def _topology_capacity_changed(self) -> None:
        """Nodes or their usage changed: TAS ClusterQueues may now place what they could not."""
        state = self._state
        touched = False
        for cq in state.cqs.values():
            if cq.tas_flavors:
                cq.generation += 1
                touched = True
        if touched:
            flush_all(state)

    def upsert_topology(self, topology: Topology) -> None:
        self._state.verdicts_may_change()
        self._state.topology.upsert_topology(topology)
        self._refresh_references()
        self._topology_capacity_changed()

    def delete_topology(self, name: str) -> None:
        self._state.verdicts_may_change()
        self._state.topology.delete_topology(name)
        self._refresh_references()

    def upsert_node(self, node: Node) -> None:
        """A Node's labels, taints, allocatable and readiness (TAS builds domains from them)."""
        if self._state.topology.nodes.get(node.name) != node:
            self._state.topology.upsert_node(node)
            self._topology_capacity_changed()

    def delete_node(self, name: str) -> None:
        self._state.topology.delete_node(name)

    def upsert_non_tas_pod(self, key: str, node_name: str, requests: Mapping[str, int]) -> None:
        """A pod bound to node_name that TAS did not place; its requests use node capacity.

        Terminated pods should be deleted instead."""
        self._state.topology.upsert_pod(key, node_name, requests)

    def delete_non_tas_pod(self, key: str) -> None:
        if key in self._state.topology.pod_usage:
            self._state.topology.delete_pod(key)
            self._topology_capacity_changed()

    def upsert_cohort(self, cohort: Cohort) -> None:
        self._state.verdicts_may_change()
        state = self._state
        state.tree.set_cohort(
            cohort.name,
            cohort.parent,
            quotas_of(cohort.resource_groups),
            cohort.fair_sharing_weight,
        )
        self._refresh_cycles()
        for cq in state.cqs.values():
            cq.generation += 1
        flush_all(state)

    def delete_cohort(self, name: str) -> None:
        self._state.verdicts_may_change()
        self._state.tree.remove_cohort(name)
        self._refresh_cycles()
        flush_all(self._state)

    def upsert_cluster_queue(self, cq: ClusterQueue) -> None:
        self._state.verdicts_may_change()
        state = self._state
        node = state.tree.set_cluster_queue(
            cq.name, quotas_of(cq.resource_groups), cq.cohort, cq.fair_sharing_weight
        )
        current = state.cqs.get(cq.name)
        if current is None:
            current = ClusterQueueState(cq, node, state.queues)
            state.cqs[cq.name] = current
            was_active, old_stop = True, StopPolicy.NONE
            current.update_spec(cq, state.flavors, state.checks, state.topology.topologies)
            for ws in state.awaiting_cq.pop(cq.name, {}).values():
                if ws.has_quota_reservation and not ws.is_finished and ws.key in state.workloads:
                    self._attach_reserving(ws, current)
        else:
            was_active, old_stop = current.active, current.spec.stop_policy
            old_groups = current.spec.resource_groups
            current.update_spec(cq, state.flavors, state.checks, state.topology.topologies)
            if old_groups != cq.resource_groups:
                current.generation += 1
        self._refresh_cycles()
        for member in state.tree_cqs(current):
            member.generation += 1
        if cq.stop_policy != StopPolicy.NONE:
            self._stop_reserving(
                list(current.reserving.values()),
                cq.stop_policy == StopPolicy.HOLD_AND_DRAIN,
                WorkloadReason.CLUSTER_QUEUE_STOPPED.value,
                "The ClusterQueue is stopped",
                f"ClusterQueue {cq.name} is stopped",
            )
        self._after_activity_change(current, was_active)
        if old_stop != StopPolicy.NONE and cq.stop_policy == StopPolicy.NONE:
            for ws in list(current.queue.heap_workloads()) + list(
                current.queue.inadmissible.values()
            ):
                self._life.restart_requeue(
                    ws,
                    WorkloadReason.CLUSTER_QUEUE_STOPPED.value,
                    WorkloadReason.CLUSTER_QUEUE_RESTARTED.value,
                    "The ClusterQueue was restarted after being stopped",
                )
                enqueue(state, ws)
        for lq in state.lqs.values():
            if lq.spec.cluster_queue == cq.name and lq.parked and not lq.held:
                for ws in list(lq.parked.values()):
                    enqueue(state, ws)
        flush_inadmissible(state, current)

    def delete_cluster_queue(self, name: str) -> None:
        self._state.verdicts_may_change()
        self._verdicts.forget(name)
        state = self._state
        cq = state.cqs.pop(name, None)
        if cq is None:
            return
        cq.queue.watcher = None
        state.queues.forget(name)
        pending = list(cq.queue.heap_workloads()) + list(cq.queue.inadmissible.values())
        for ws in cq.reserving.values():
            ws.usage_cq = None
            ws.usage = {}
            state.awaiting_cq.setdefault(name, {})[ws.key] = ws
        state.tree.remove_cluster_queue(name)
        self._refresh_cycles()
        for ws in pending:
            ws.where = Where.NOWHERE
            enqueue(state, ws)
        flush_all(state)

    def upsert_local_queue(self, lq: LocalQueue) -> None:
        self._state.verdicts_may_change()
        state = self._state
        old = state.lqs.get(lq.key)
        was_held = old.held if old is not None else False
        pending_before = self._lq_pending(lq.key)
        new = LocalQueueState(lq)
        if old is not None:
            new.parked = old.parked
        state.lqs[lq.key] = new
        if new.held:
            cq = state.cqs.get(lq.cluster_queue)
            if cq is not None:
                self._stop_reserving(
                    [ws for ws in cq.reserving.values() if ws.lq_key == lq.key],
                    lq.stop_policy == StopPolicy.HOLD_AND_DRAIN,
                    WorkloadReason.LOCAL_QUEUE_STOPPED.value,
                    "The LocalQueue is stopped",
                    f"LocalQueue {lq.name} is stopped",
                )
        elif was_held:
            for ws in pending_before:
                self._life.restart_requeue(
                    ws,
                    WorkloadReason.LOCAL_QUEUE_STOPPED.value,
                    WorkloadReason.LOCAL_QUEUE_RESTARTED.value,
                    "The LocalQueue was restarted after being stopped",
                )
        for ws in sorted(self._lq_pending(lq.key), key=lambda w: w.key):
            enqueue(state, ws)

    def delete_local_queue(self, namespace: str, name: str) -> None:
        self._state.verdicts_may_change()
        state = self._state
        key = f"{namespace}/{name}"
        pending = self._lq_pending(key)
        if key not in state.lqs:
            return
        for ws in pending:
            dequeue(state, ws)
        del state.lqs[key]
        for ws in pending:
            enqueue(state, ws)

    def upsert_priority_class(self, pc: WorkloadPriorityClass) -> None:
        self._state.verdicts_may_change()
        self._state.priority_classes[pc.name] = pc

    def delete_priority_class(self, name: str) -> None:
        self._state.verdicts_may_change()
        self._state.priority_classes.pop(name, None)

    def priority_class_value(self, name: str) -> int | None:
        """Value of a WorkloadPriorityClass, for drivers resolving priorities at creation."""
        pc = self._state.priority_classes.get(name)
        return None if pc is None else pc.value

    def upsert_admission_check(self, check: AdmissionCheck) -> None:
        self._state.verdicts_may_change()
        self._state.checks[check.name] = check
        self._refresh_references()
        flush_all(self._state)

    def delete_admission_check(self, name: str) -> None:
        self._state.verdicts_may_change()
        if self._state.checks.pop(name, None) is not None:
            self._refresh_references()

    def upsert_namespace(self, namespace: Namespace) -> None:
        self._state.verdicts_may_change()
        state = self._state
        old = state.namespaces.get(namespace.name)
        state.namespaces[namespace.name] = namespace
        if old is None or dict(old.labels) != dict(namespace.labels):
            flush_all(state)

    def delete_namespace(self, name: str) -> None:
        self._state.verdicts_may_change()
        self._state.namespaces.pop(name, None)

    def upsert_limit_range(self, limit_range: LimitRange) -> None:
        """A LimitRange's defaults now count for pods of its namespace (see
        `resource_defaults`); waiting workloads there are counted again."""
        self._state.verdicts_may_change()
        state = self._state
        ranges = dict(state.limit_ranges.get(limit_range.namespace, {}))
        if ranges.get(limit_range.name) == limit_range:
            return
        ranges[limit_range.name] = limit_range
        state.set_limit_ranges(limit_range.namespace, ranges)
        self._recount(namespace=limit_range.namespace)

    def delete_limit_range(self, namespace: str, name: str) -> None:
        self._state.verdicts_may_change()
        state = self._state
        ranges = dict(state.limit_ranges.get(namespace, {}))
        if ranges.pop(name, None) is None:
            return
        state.set_limit_ranges(namespace, ranges)
        self._recount(namespace=namespace)

    def upsert_runtime_class(self, runtime_class: RuntimeClass) -> None:
        """A RuntimeClass's overhead now counts for templates naming it without their own."""
        self._state.verdicts_may_change()
        state = self._state
        if state.runtime_classes.get(runtime_class.name) == runtime_class:
            return
        state.runtime_classes[runtime_class.name] = runtime_class
        self._recount(runtime_class=runtime_class.name)

    def delete_runtime_class(self, name: str) -> None:
        self._state.verdicts_may_change()
        if self._state.runtime_classes.pop(name, None) is not None:
            self._recount(runtime_class=name)

    # ----------------------------------------------------------------- workloads
    def add_workload(self, workload: Workload) -> StatusChanges:
        state = self._state
        if workload.key in state.workloads:
            return self.update_workload(workload)
        ws = WorkloadState(workload)
        self._count_requests(ws)
        state.workloads[ws.key] = ws
        self._link_variant(ws, None)
        if workload.status is not None:
            self._adopt(ws, workload.status)
        if not ws.active:
            self._life.deactivate(ws)
        enqueue(state, ws)
        return self._drain()

    def _adopt(self, ws: WorkloadState, status: WorkloadStatus) -> None:
        """Take over a status written before (restart recovery, scenario set-up)."""
        state = self._state
        for cond in status.conditions:
            ws.conditions[cond.type] = cond
        ws.admission = status.admission
        if status.requeue_state is not None:
            ws.requeue_count = status.requeue_state.count
            ws.requeue_at = status.requeue_state.requeue_at
        ws.checks = {c.name: c for c in status.admission_checks}
        if status.reclaimable_pods:
            ws.reclaimable = dict(status.reclaimable_pods)
            ws.refresh_pod_sets()
        ws.accumulated = status.accumulated_past_execution_time_seconds
        ws.evictions = dict(status.evictions)
        ws.active = ws.active and status.active
        if ws.admission is not None and ws.is_true(QUOTA_RESERVED) and not ws.is_finished:
            cq = state.cqs.get(ws.admission.cluster_queue)
            ws.cluster_queue = ws.admission.cluster_queue
            reserved = ws.conditions.get(QUOTA_RESERVED)
            ws.reserved_at = reserved.last_transition_time if reserved else state.now()
            if cq is not None:
                self._attach_reserving(ws, cq)
            else:
                state.awaiting_cq.setdefault(ws.cluster_queue, {})[ws.key] = ws
        if ws.requeue_at is not None:
            self._life.schedule_backoff(ws)

    def _attach_reserving(self, ws: WorkloadState, cq: ClusterQueueState) -> None:
        if concurrent_admission.is_parent(self._state, cq, ws):
            # It carries its variant's admission; the variant holds the quota.
            if ws.is_admitted:
                self._life.adopt_admitted(ws)
            return
        self._life.charge(ws, cq)
        if ws.is_admitted:
            self._life.adopt_admitted(ws)
        elif not ws.is_evicted:
            # Reserved with every check Ready but not Admitted: the last writer died between
            # the checks' Ready and its own Admitted write. Admit now, or it would hold its
            # quota for ever (nothing else changes for it).
            self._life.admit_if_ready(ws)

    def update_workload(self, workload: Workload) -> StatusChanges:
        state = self._state
        ws = state.workloads.get(workload.key)
        if ws is None:
            return self.add_workload(workload)
        old = ws.spec
        ws.spec = workload
        self._link_variant(ws, old.variant_of)
        if old.active != workload.active:
            if workload.active:
                self._life.reactivate(ws)
            else:
                self._life.deactivate(ws)
        if dict(old.reclaimable_pods) != dict(workload.reclaimable_pods):
            self._life.set_reclaimable(ws, workload.reclaimable_pods)
        requeue = False
        if old.priority != workload.priority:
            ws.priority = workload.priority
            requeue = True
            if ws.usage_cq is not None:
                # A workload holding quota changed rank as a victim: those parked behind
                # it may now preempt it (or may no longer), so their verdicts expire.
                cq = state.cqs.get(ws.usage_cq)
                if cq is not None:
                    state.verdicts_may_change(cq)
                    flush_inadmissible(state, cq)
        if old.queue_name != workload.queue_name:
            ws.lq_key = f"{workload.namespace}/{workload.queue_name}"
            requeue = True
        if old.pod_sets != workload.pod_sets:
            self._count_requests(ws)
            ws.last_assignment = None
            requeue = True
            if ws.usage_cq is not None:
                # An elastic job scaled down in place: it holds only what it now counts.
                self._life.recharge(ws)
                cq = state.cqs.get(ws.usage_cq)
                if cq is not None:
                    flush_inadmissible(state, cq)
        if requeue and ws.where != Where.NOWHERE:
            enqueue(state, ws)
        return self._drain()

    def delete_workload(self, key: str) -> StatusChanges:
        state = self._state
        ws = state.workloads.pop(key, None)
        if ws is not None:
            self._life.forget(ws)
            self._unlink_variant(key, ws.spec.variant_of)
            state.dirty.add(ws.spec.variant_of or key)
        state.dirty.discard(key)
        return self._drain()

    # ----------------------------------------------------------------- scheduling
    def schedule(self) -> CycleResult:
        result = SchedulingCycle(self._state, self._life, self._preemptor, self._verdicts).run()
        result.changed = self._drain()
        return result

    # ----------------------------------------------------------------- lifecycle
    def finish(
        self,
        key: str,
        succeeded: bool = True,
        message: str = "",
        reason: WorkloadReason | None = None,
    ) -> StatusChanges:
        self._life.finish(self._ws(key), succeeded, message, reason)
        return self._drain()

    def evict(self, key: str, reason: WorkloadReason | str, message: str) -> StatusChanges:
        ws = self._ws(key)
        if not ws.is_evicted and ws.has_quota_reservation:
            self._life.evict(ws, str(reason), message)
        return self._drain()

    def replace_failed_node(self, key: str, node: str) -> StatusChanges:
        """Move an admitted TAS workload's pods off a failed node (`topology_replacement`);
        when no replacement fits, evict it with reason NodeFailures, as upstream."""
        self._state.verdicts_may_change()
        ws = self._ws(key)
        state = self._state
        if not ws.is_admitted or ws.is_evicted or ws.admission is None:
            return self._drain()
        cq = state.cqs.get(ws.admission.cluster_queue)
        outcome = replace_node(
            state,
            ws.admission,
            {ps.name: ps for ps in ws.spec.pod_sets},
            {ps.name: dict(ps.per_pod) for ps in ws.pod_sets},
            {ps.name: cq is not None and tas_implied(ps, cq) for ps in ws.spec.pod_sets},
            node,
        )
        if outcome is None:
            return self._drain()
        if outcome.admission is None:
            self._life.evict(
                ws,
                WorkloadReason.NODE_FAILURES,
                f"Workload was evicted as there was no replacement for unhealthy node(s): {node}",
            )
            return self._drain()
        state.topology.remove_usage(ws.tas_usage)
        ws.admission = outcome.admission
        ws.tas_usage = tas_usage_from_admission(ws, state)
        state.topology.add_usage(ws.tas_usage)
        state.dirty.add(ws.key)
        return self._drain()

    def complete_eviction(self, key: str) -> StatusChanges:
        self._life.complete_eviction(self._ws(key))
        return self._drain()

    def set_pods_ready(self, key: str, ready: bool) -> StatusChanges:
        self._life.set_pods_ready(self._ws(key), ready)
        return self._drain()

    def set_waiting_for_replacement_pods(self, key: str, waiting: bool) -> StatusChanges:
        self._life.set_waiting_for_replacement_pods(self._ws(key), waiting)
        return self._drain()

    def set_admission_check_state(
        self,
        key: str,
        check: str,
        state: CheckState,
        message: str = "",
        requeue_after: float | None = None,
        pod_set_updates: tuple[Mapping[str, object], ...] = (),
    ) -> StatusChanges:
        self._life.set_check(
            self._ws(key), check, CheckState(state), message, requeue_after, pod_set_updates
        )
        return self._drain()

    def set_reclaimable_pods(self, key: str, reclaimable: Mapping[str, int]) -> StatusChanges:
        self._life.set_reclaimable(self._ws(key), reclaimable)
        return self._drain()

    def deactivate(self, key: str) -> StatusChanges:
        self._life.deactivate(self._ws(key))
        return self._drain()

    def reactivate(self, key: str) -> StatusChanges:
        self._life.reactivate(self._ws(key))
        return self._drain()

    def hold(self, key: str, message: str) -> StatusChanges:
        self._life.hold(self._ws(key), message)
        return self._drain()

    def release_hold(self, key: str) -> StatusChanges:
        self._life.release_hold(self._ws(key))
        return self._drain()

    def tick(self) -> StatusChanges:
        self._life.tick()
        return self._drain()

    def next_timer(self) -> float | None:
        return self._life.next_timer()

    def next_heads(self) -> frozenset[str]:
        """The heads the next `schedule()` would take, without taking them."""
        state = self._state
        heads: set[str] = set()
        for name in state.queues.with_heads():
            cq = state.cqs[name]
            if not cq.schedulable:
                continue
            key = cq.queue.peek_key()
            if key is not None:
                heads.add(key)
        return frozenset(heads)

    def would_repeat(self, result: CycleResult) -> bool:
        """Whether running `schedule()` again now would decide exactly as `result` did.

        A cycle that admitted and preempted nothing changed no quota. If the next cycle
        would take the very same heads, none of which has another flavor left to try, it
        would reach the same verdicts, so a caller should wait for a change (a workload
        added, finished or evicted, a queue or quota change, a timer) instead of retrying.
        """
        if result.admitted or result.preempted or not result.tried:
            return False
        if self.next_heads() != result.tried:
            return False
        workloads = self._state.workloads
        for key in result.tried:
            ws = workloads.get(key)
            last = None if ws is None else ws.last_assignment
            if last is not None and last.pending_flavors():
                return False
        return True

    # ----------------------------------------------------------------- queries
    def workload_status(self, key: str) -> WorkloadStatus | None:
        ws = self._state.workloads.get(key)
        return None if ws is None else ws.status()

    def workload_cluster_queue(self, key: str) -> str | None:
        """The ClusterQueue a workload is queued in or admitted by, if known."""
        ws = self._state.workloads.get(key)
        return None if ws is None else ws.cluster_queue

    def _flavor_figures(
        self, cq: ClusterQueueState, usage: Mapping[FlavorResource, int]
    ) -> tuple[FlavorResourceUsage, ...]:
        out = []
        for group in cq.spec.resource_groups:
            for fq in group.flavors:
                for res in group.covered_resources:
                    total = usage.get((fq.name, res), 0)
                    nominal = cq.node.quota((fq.name, res)).nominal
                    out.append(
                        FlavorResourceUsage(
                            flavor=fq.name,
                            resource=res,
                            total=total,
                            borrowed=max(0, total - nominal),
                        )
                    )
        return tuple(out)

    @staticmethod
    def _sum_usage(workloads: Iterable[WorkloadState]) -> dict[FlavorResource, int]:
        out: dict[FlavorResource, int] = {}
        for ws in workloads:
            for fr, val in ws.usage.items():
                out[fr] = out.get(fr, 0) + val
        return out

    def cluster_queue_status(self, name: str) -> ClusterQueueStatus | None:
        cq = self._state.cqs.get(name)
        if cq is None:
            return None
        reserving = list(cq.reserving.values())
        admitted = [ws for ws in reserving if ws.is_admitted]
        inactive = cq.inactive_reason()
        if inactive is None:
            cond = Condition(
                type=ClusterQueueConditionType.ACTIVE.value,
                status=True,
                reason=QueueActiveReason.READY.value,
                message="Can admit new workloads",
                last_transition_time=self.clock.now(),
            )
        else:
            cond = Condition(
                type=ClusterQueueConditionType.ACTIVE.value,
                status=False,
                reason=inactive[0],
                message=inactive[1],
                last_transition_time=self.clock.now(),
            )
        share = 0
        if cq.node.parent is not None and not cq.in_cycle:
            share = dominant_resource_share(cq.node).rounded()
        return ClusterQueueStatus(
            pending_workloads=cq.queue.total(),
            reserving_workloads=len(reserving),
            admitted_workloads=len(admitted),
            flavors_reservation=self._flavor_figures(cq, self._sum_usage(reserving)),
            flavors_usage=self._flavor_figures(cq, self._sum_usage(admitted)),
            weighted_share=share,
            conditions=(cond,),
        )

    def cohort_status(self, name: str) -> CohortStatus | None:
        tree = self._state.tree
        node = tree.cohorts.get(name)
        if node is None:
            return None
        cycle = tree.cycle_of(name)
        if cycle is not None:
            return CohortStatus(
                weighted_share=0,
                conditions=(
                    Condition(
                        type=ClusterQueueConditionType.ACTIVE.value,
                        status=False,
                        reason=QueueActiveReason.COHORT_HAS_CYCLE.value,
                        message=f"Cohort has a cycle: {' -> '.join(cycle)}",
                        last_transition_time=self.clock.now(),
                    ),
                ),
            )
        share = dominant_resource_share(node).rounded() if node.parent is not None else 0
        return CohortStatus(weighted_share=share)

    def local_queue_status(self, namespace: str, name: str) -> LocalQueueStatus | None:
        state = self._state
        key = f"{namespace}/{name}"
        lq = state.lqs.get(key)
        if lq is None:
            return None
        cq = state.cqs.get(lq.spec.cluster_queue)
        reserving = [ws for ws in cq.reserving.values() if ws.lq_key == key] if cq else []
        admitted = [ws for ws in reserving if ws.is_admitted]
        now = self.clock.now()
        if lq.held:
            cond = Condition(
                type=LocalQueueConditionType.ACTIVE.value,
                status=False,
                reason=QueueActiveReason.STOPPED.value,
                message="LocalQueue is stopped",
                last_transition_time=now,
            )
        elif cq is None:
            cond = Condition(
                type=LocalQueueConditionType.ACTIVE.value,
                status=False,
                reason=QueueActiveReason.CLUSTER_QUEUE_DOES_NOT_EXIST.value,
                message="Can't submit new workloads to clusterQueue",
                last_transition_time=now,
            )
        elif not cq.active:
            cond = Condition(
                type=LocalQueueConditionType.ACTIVE.value,
                status=False,
                reason=QueueActiveReason.CLUSTER_QUEUE_IS_INACTIVE.value,
                message="Can't submit new workloads to clusterQueue",
                last_transition_time=now,
            )
        else:
            cond = Condition(
                type=LocalQueueConditionType.ACTIVE.value,
                status=True,
                reason=QueueActiveReason.READY.value,
                message="Can submit new workloads to localQueue",
                last_transition_time=now,
            )
        figures: tuple[FlavorResourceUsage, ...] = ()
        usage_figures: tuple[FlavorResourceUsage, ...] = ()
        if cq is not None:
            figures = self._flavor_figures(cq, self._sum_usage(reserving))
            usage_figures = self._flavor_figures(cq, self._sum_usage(admitted))
        return LocalQueueStatus(
            pending_workloads=self._lq_pending_counts(key)[0],
            reserving_workloads=len(reserving),
            admitted_workloads=len(admitted),
            flavors_reservation=figures,
            flavors_usage=usage_figures,
            conditions=(cond,),
        )

    def pending_workloads(self, cluster_queue: str) -> list[PendingWorkload]:
        cq = self._state.cqs.get(cluster_queue)
        if cq is None:
            return []
        out = []
        per_lq: dict[str, int] = {}
        for position, ws in enumerate(cq.queue.ordered()):
            lq_position = per_lq.get(ws.lq_key, 0)
            per_lq[ws.lq_key] = lq_position + 1
            out.append(
                PendingWorkload(
                    namespace=ws.spec.namespace,
                    name=ws.spec.name,
                    local_queue=ws.spec.queue_name,
                    cluster_queue=cq.name,
                    priority=ws.priority,
                    creation_time=ws.spec.creation_time,
                    position_in_cluster_queue=position,
                    position_in_local_queue=lq_position,
                )
            )
        return out

    def queue_positions(self) -> dict[str, int]:
        """Every pending workload's key → its position in its ClusterQueue, as
        `pending_workloads` numbers them, without building an entry per workload (the
        dashboard asks on every change)."""
        out: dict[str, int] = {}
        for cq in self._state.cqs.values():
            for position, ws in enumerate(cq.queue.ordered()):
                out[ws.key] = position
        return out

    def pending_workloads_in_local_queue(self, namespace: str, name: str) -> list[PendingWorkload]:
        lq = self._state.lqs.get(f"{namespace}/{name}")
        if lq is None:
            return []
        return [
            p
            for p in self.pending_workloads(lq.spec.cluster_queue)
            if p.namespace == namespace and p.local_queue == name
        ]

    def has_queued_work(self) -> bool:
        """True if some active ClusterQueue has a workload ready to be tried next cycle."""
        cqs = self._state.cqs
        return any(cqs[name].schedulable for name in self._state.queues.with_heads())

    # ----------------------------------------------------------------- introspection
    def resource_flavor(self, name: str) -> ResourceFlavor | None:
        """A known ResourceFlavor (for pod_set_updates at admission time)."""
        return self._state.flavors.get(name)

    def cluster_queue_names(self) -> list[str]:
        return sorted(self._state.cqs)

    def cohort_names(self) -> list[str]:
        return sorted(self._state.tree.cohorts)

    def local_queue_keys(self) -> list[str]:
        return sorted(self._state.lqs)

    def cluster_queue_usage(self, name: str) -> dict[FlavorResource, int]:
        """Quota charged to a ClusterQueue per (flavor, resource), for tests and metrics."""
        cq = self._state.cqs.get(name)
        return {} if cq is None else {fr: v for fr, v in cq.node.usage.items() if v}

    def cluster_queue_quotas(self, name: str) -> dict[FlavorResource, Quota]:
        """The quotas a ClusterQueue declares per (flavor, resource), for metrics."""
        cq = self._state.cqs.get(name)
        return {} if cq is None else dict(cq.node.quotas)

    def cohort_figures(self, name: str) -> CohortFigures | None:
        """A cohort's subtree quota and reservations, and its admitted count, for metrics."""
        node = self._state.tree.cohorts.get(name)
        if node is None:
            return None
        admitted = 0
        for leaf in node.subtree_cluster_queues():
            cq = self._state.cqs.get(leaf.name)
            if cq is not None:
                admitted += sum(1 for ws in cq.reserving.values() if ws.is_admitted)
        return CohortFigures(
            subtree_quota=dict(node.subtree_quota),
            reservations={fr: v for fr, v in node.usage.items() if v},
            admitted_workloads=admitted,
        )

    def inadmissible_workloads(self, cluster_queue: str) -> list[str]:
        cq = self._state.cqs.get(cluster_queue)
        return [] if cq is None else sorted(cq.queue.inadmissible)

    def local_queue_inadmissible_count(self, namespace: str, name: str) -> int:
        """Workloads of this LocalQueue parked as inadmissible in its ClusterQueue."""
        return self._lq_pending_counts(f"{namespace}/{name}")[1]

    def pending_counts(self, cluster_queue: str) -> tuple[int, int]:
        """(in the heap, inadmissible) of a ClusterQueue, without listing them."""
        cq = self._state.cqs.get(cluster_queue)
        return (0, 0) if cq is None else (len(cq.queue), len(cq.queue.inadmissible))

    def queued_workloads(self, cluster_queue: str) -> list[str]:
        cq = self._state.cqs.get(cluster_queue)
        return [] if cq is None else sorted(ws.key for ws in cq.queue.heap_workloads())

"""Conformance suite: every YAML scenario under tests/scenarios runs against a fresh Engine.

The scenario format is described in tests/scenarios/README.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from core.adapters.engine_config import engine_config_from_dict
from core.adapters.kueue_manifests import (
    ManifestError,
    admission_check_from_manifest,
    cluster_queue_from_manifest,
    cohort_from_manifest,
    local_queue_from_manifest,
    namespace_from_manifest,
    priority_class_from_manifest,
    resource_flavor_from_manifest,
    topology_from_manifest,
    workload_from_manifest,
)
from core.adapters.node_manifests import node_from_manifest
from core.api.admission_check import CheckState
from core.engine.clock import ManualClock
from core.engine.engine import Engine
from core.engine.model import CycleResult, WorkloadStatus
from core.engine.quantity import to_base_units

SCENARIO_ROOT = Path(__file__).resolve().parents[2] / "scenarios"
FIXTURES = SCENARIO_ROOT / "_fixtures"


class ScenarioFailure(AssertionError):
    pass


def scenario_files() -> list[Path]:
    return sorted(p for p in SCENARIO_ROOT.rglob("*.yaml") if "_fixtures" not in p.parts)


def _expand(objects: list[Any], base: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for item in objects or ():
        if isinstance(item, dict) and set(item) == {"include"}:
            names = item["include"] if isinstance(item["include"], list) else [item["include"]]
            for name in names:
                path = FIXTURES / name
                if not path.exists():
                    path = base / name
                with path.open() as f:
                    out.extend(_expand(yaml.safe_load(f) or [], path.parent))
        else:
            out.append(item)
    return out


class ScenarioRun:
    def __init__(self, path: Path) -> None:
        self.path = path
        with path.open() as f:
            self.doc: dict[str, Any] = yaml.safe_load(f)
        if not isinstance(self.doc.get("name"), str):
            raise ScenarioFailure(f"{path}: a scenario needs a `name` sentence")
        self.clock = ManualClock(float(self.doc.get("startTime", 0)))
        self.engine = Engine(engine_config_from_dict(self.doc.get("config")), self.clock)
        self.priority_classes: dict[str, int] = {}
        self.step_no = 0
        self.last_cycle: CycleResult | None = None

    # ------------------------------------------------------------------ objects
    def apply(self, obj: Mapping[str, Any]) -> None:
        kind = obj.get("kind")
        e = self.engine
        if kind == "ResourceFlavor":
            e.upsert_resource_flavor(resource_flavor_from_manifest(obj))
        elif kind == "ClusterQueue":
            e.upsert_cluster_queue(cluster_queue_from_manifest(obj))
        elif kind == "Cohort":
            e.upsert_cohort(cohort_from_manifest(obj))
        elif kind == "LocalQueue":
            e.upsert_local_queue(local_queue_from_manifest(obj))
        elif kind == "WorkloadPriorityClass":
            pc = priority_class_from_manifest(obj)
            self.priority_classes[pc.name] = pc.value
            e.upsert_priority_class(pc)
        elif kind == "AdmissionCheck":
            e.upsert_admission_check(admission_check_from_manifest(obj))
        elif kind == "Namespace":
            e.upsert_namespace(namespace_from_manifest(obj))
        elif kind == "Topology":
            e.upsert_topology(topology_from_manifest(obj))
        elif kind == "Node":
            e.upsert_node(node_from_manifest(obj))
        elif kind == "Workload":
            wl = workload_from_manifest(obj, self.priority_classes)
            if e.workload_status(wl.key) is None:
                e.add_workload(wl)
            else:
                e.update_workload(wl)
        else:
            raise ManifestError(f"unsupported kind {kind!r}")

    def delete(self, spec: Mapping[str, Any]) -> None:
        kind, name = spec["kind"], spec["name"]
        ns = spec.get("namespace", "default")
        e = self.engine
        if kind == "Workload":
            e.delete_workload(f"{ns}/{name}")
        elif kind == "ClusterQueue":
            e.delete_cluster_queue(name)
        elif kind == "Cohort":
            e.delete_cohort(name)
        elif kind == "LocalQueue":
            e.delete_local_queue(ns, name)
        elif kind == "ResourceFlavor":
            e.delete_resource_flavor(name)
        elif kind == "AdmissionCheck":
            e.delete_admission_check(name)
        elif kind == "Namespace":
            e.delete_namespace(name)
        elif kind == "Node":
            e.delete_node(name)
        else:
            raise ManifestError(f"cannot delete kind {kind!r}")

    # ------------------------------------------------------------------ run
    def run(self) -> None:
        for obj in _expand(self.doc.get("objects") or [], self.path.parent):
            self.apply(obj)
        for step in self.doc.get("steps") or []:
            self.step_no += 1
            self.last_cycle = None
            self._do(step)
            if "expect" in step:
                self._check(step["expect"])

    def _do(self, step: Mapping[str, Any]) -> None:
        e = self.engine
        actions = [k for k in step if k not in ("expect", "note")]
        if len(actions) != 1:
            raise ScenarioFailure(
                f"step {self.step_no}: exactly one action expected, got {actions}"
            )
        action = actions[0]
        arg = step[action]
        if action == "schedule":
            times = int(arg or 1)
            merged = CycleResult()
            for _ in range(times):
                e.tick()
                r = e.schedule()
                merged.admitted.extend(r.admitted)
                merged.preempted.extend(r.preempted)
                merged.heads += r.heads
            self.last_cycle = merged
        elif action == "finish":
            spec = arg if isinstance(arg, dict) else {"workload": arg}
            e.finish(spec["workload"], bool(spec.get("succeeded", True)), spec.get("message", ""))
        elif action == "evict":
            e.evict(
                arg["workload"], arg.get("reason", "NodeFailures"), arg.get("message", "evicted")
            )
        elif action == "completeEviction":
            e.complete_eviction(arg)
        elif action == "advanceClock":
            self.clock.advance(float(arg))
            e.tick()
        elif action == "tick":
            e.tick()
        elif action == "setPodsReady":
            e.set_pods_ready(arg["workload"], bool(arg.get("ready", True)))
        elif action == "setAdmissionCheck":
            e.set_admission_check_state(
                arg["workload"],
                arg["check"],
                CheckState(arg["state"]),
                arg.get("message", ""),
                arg.get("requeueAfterSeconds"),
            )
        elif action == "setReclaimablePods":
            e.set_reclaimable_pods(arg["workload"], arg["pods"])
        elif action == "deactivate":
            e.deactivate(arg)
        elif action == "reactivate":
            e.reactivate(arg)
        elif action in ("apply", "update", "create"):
            items = arg if isinstance(arg, list) else [arg]
            for obj in _expand(items, self.path.parent):
                self.apply(obj)
        elif action == "delete":
            self.delete(arg)
        else:
            raise ScenarioFailure(f"step {self.step_no}: unknown action {action!r}")

    # ------------------------------------------------------------------ expectations
    def fail(self, msg: str) -> None:
        raise ScenarioFailure(f"{self.path.name} step {self.step_no}: {msg}")

    def _check(self, expect: Mapping[str, Any]) -> None:
        for key, value in expect.items():
            handler = getattr(self, f"_expect_{key}", None)
            if handler is None:
                self.fail(f"unknown expectation {key!r}")
            else:
                handler(value)

    def _cycle(self) -> CycleResult:
        if self.last_cycle is None:
            self.fail("admitted/preempted expectations need a schedule step")
        assert self.last_cycle is not None
        return self.last_cycle

    def _expect_admitted(self, value: Any) -> None:
        got = {a.key: a.admission for a in self._cycle().admitted}
        want = value if isinstance(value, dict) else {k: None for k in value or ()}
        if set(got) != set(want):
            self.fail(f"admitted {sorted(got)}, expected {sorted(want)}")
        for key, spec in want.items():
            if spec:
                self._match_admission(key, got[key], spec)

    def _expect_preempted(self, value: Any) -> None:
        got = {p.victim: p for p in self._cycle().preempted}
        want = value if isinstance(value, dict) else {k: None for k in value or ()}
        if set(got) != set(want):
            self.fail(f"preempted {sorted(got)}, expected {sorted(want)}")
        for key, reason in want.items():
            if reason is not None and got[key].reason.value != reason:
                self.fail(f"{key} preempted for {got[key].reason.value}, expected {reason}")

    def _match_admission(self, key: str, admission: Any, spec: Mapping[str, Any]) -> None:
        if admission is None:
            self.fail(f"{key} has no admission")
        if "clusterQueue" in spec and admission.cluster_queue != spec["clusterQueue"]:
            self.fail(
                f"{key} admitted in {admission.cluster_queue}, expected {spec['clusterQueue']}"
            )
        by_name = {psa.name: psa for psa in admission.pod_set_assignments}
        for ps, flavors in (spec.get("flavors") or {}).items():
            got = dict(by_name[ps].flavors) if ps in by_name else None
            if got != flavors:
                self.fail(f"{key} pod set {ps} flavors {got}, expected {flavors}")
        for ps, count in (spec.get("count") or {}).items():
            got_count = by_name[ps].count if ps in by_name else None
            if got_count != count:
                self.fail(f"{key} pod set {ps} count {got_count}, expected {count}")
        for ps, want_domains in (spec.get("topology") or {}).items():
            assignment = by_name[ps].topology_assignment if ps in by_name else None
            got_domains = (
                None
                if assignment is None
                else {",".join(d.values): d.count for d in assignment.domains}
            )
            if got_domains != want_domains:
                self.fail(f"{key} pod set {ps} topology {got_domains}, expected {want_domains}")
        for ps, usage in (spec.get("resourceUsage") or {}).items():
            got_usage = dict(by_name[ps].resource_usage) if ps in by_name else {}
            want_usage = {r: to_base_units(r, q) for r, q in usage.items()}
            if got_usage != want_usage:
                self.fail(f"{key} pod set {ps} usage {got_usage}, expected {want_usage}")

    def _status(self, key: str) -> WorkloadStatus:
        status = self.engine.workload_status(key)
        if status is None:
            self.fail(f"unknown workload {key}")
        assert status is not None
        return status

    def _match_condition(self, key: str, status: WorkloadStatus, cond: Mapping[str, Any]) -> None:
        ctype = cond["type"]
        got = status.condition(ctype)
        if got is None:
            self.fail(f"{key} has no {ctype} condition")
        assert got is not None
        want_status = str(cond.get("status", "True")) == "True"
        checks = [
            ("status", got.status, want_status, got.status == want_status),
            ("reason", got.reason, cond.get("reason"), got.reason == cond.get("reason")),
            ("message", got.message, cond.get("message"), got.message == cond.get("message")),
            (
                "messageContains",
                got.message,
                cond.get("messageContains"),
                str(cond.get("messageContains")) in got.message,
            ),
            (
                "lastTransitionTime",
                got.last_transition_time,
                cond.get("lastTransitionTime"),
                got.last_transition_time == float(cond.get("lastTransitionTime") or 0),
            ),
        ]
        for field, have, want, ok in checks:
            if (field == "status" or field in cond) and not ok:
                self.fail(f"{key} {ctype} {field}: got {have!r}, expected {want!r}")

    def _expect_workloads(self, value: Mapping[str, Any]) -> None:
        for key, spec in value.items():
            status = self._status(key)
            if "admitted" in spec:
                reserved = status.admission is not None
                if reserved != bool(spec["admitted"]):
                    self.fail(f"{key} reserved={reserved}, expected {spec['admitted']}")
            if spec.get("clusterQueue") or spec.get("flavors") or spec.get("count"):
                self._match_admission(key, status.admission, spec)
            for cond in spec.get("conditions") or ():
                self._match_condition(key, status, cond)
            for ctype in spec.get("absentConditions") or ():
                if status.condition(ctype) is not None:
                    self.fail(f"{key} has unexpected {ctype} condition")
            if "requeueState" in spec:
                want = spec["requeueState"]
                got_rs = status.requeue_state
                if want is None:
                    if got_rs is not None:
                        self.fail(f"{key} requeueState {got_rs}, expected none")
                else:
                    if got_rs is None:
                        self.fail(f"{key} has no requeueState")
                    assert got_rs is not None
                    if "count" in want and got_rs.count != want["count"]:
                        self.fail(f"{key} requeue count {got_rs.count}, expected {want['count']}")
                    if "requeueAt" in want:
                        expected_at = (
                            None if want["requeueAt"] is None else float(want["requeueAt"])
                        )
                        if got_rs.requeue_at != expected_at:
                            self.fail(
                                f"{key} requeueAt {got_rs.requeue_at}, expected {expected_at}"
                            )
            if "active" in spec and status.active != spec["active"]:
                self.fail(f"{key} active={status.active}, expected {spec['active']}")
            if "admissionChecks" in spec:
                got_checks = {c.name: c.state.value for c in status.admission_checks}
                if got_checks != spec["admissionChecks"]:
                    self.fail(
                        f"{key} admission checks {got_checks}, expected {spec['admissionChecks']}"
                    )
            if "retryCount" in spec:
                got_retry = {c.name: c.retry_count for c in status.admission_checks}
                if got_retry != spec["retryCount"]:
                    self.fail(f"{key} retry counts {got_retry}, expected {spec['retryCount']}")
            if "accumulatedPastExecutionTimeSeconds" in spec:
                got_acc = status.accumulated_past_execution_time_seconds
                if got_acc != float(spec["accumulatedPastExecutionTimeSeconds"]):
                    self.fail(f"{key} accumulated time {got_acc}")
            if "evictions" in spec and dict(status.evictions) != spec["evictions"]:
                self.fail(f"{key} evictions {dict(status.evictions)}, expected {spec['evictions']}")

    def _expect_clusterQueues(self, value: Mapping[str, Any]) -> None:
        for name, spec in value.items():
            status = self.engine.cluster_queue_status(name)
            if status is None:
                self.fail(f"unknown ClusterQueue {name}")
            assert status is not None
            for field, attr in (
                ("pending", "pending_workloads"),
                ("reserving", "reserving_workloads"),
                ("admitted", "admitted_workloads"),
                ("weightedShare", "weighted_share"),
            ):
                if field in spec and getattr(status, attr) != spec[field]:
                    self.fail(
                        f"ClusterQueue {name} {field} {getattr(status, attr)}, want {spec[field]}"
                    )
            for field, entries in (
                ("usage", status.flavors_reservation),
                ("admittedUsage", status.flavors_usage),
            ):
                if field not in spec:
                    continue
                got = {(e.flavor, e.resource): e.total for e in entries}
                for flavor, resources in spec[field].items():
                    for res, qty in resources.items():
                        want = to_base_units(res, qty)
                        have = got.get((flavor, res), 0)
                        if have != want:
                            self.fail(f"CQ {name} {field} {flavor}/{res}: {have}, want {want}")
            if "borrowed" in spec:
                got_b = {(e.flavor, e.resource): e.borrowed for e in status.flavors_reservation}
                for flavor, resources in spec["borrowed"].items():
                    for res, qty in resources.items():
                        if got_b.get((flavor, res), 0) != to_base_units(res, qty):
                            self.fail(
                                f"CQ {name} borrowed {flavor}/{res}: {got_b.get((flavor, res))}"
                            )
            if "active" in spec:
                cond = status.conditions[0]
                want_active = spec["active"]
                if isinstance(want_active, bool):
                    if cond.status != want_active:
                        self.fail(f"ClusterQueue {name} active={cond.status}")
                elif cond.status or cond.reason != want_active:
                    self.fail(f"CQ {name} Active {cond.status}/{cond.reason}, want {want_active}")

    def _expect_localQueues(self, value: Mapping[str, Any]) -> None:
        for key, spec in value.items():
            ns, _, name = key.partition("/")
            status = self.engine.local_queue_status(ns, name)
            if status is None:
                self.fail(f"unknown LocalQueue {key}")
            assert status is not None
            for field, attr in (
                ("pending", "pending_workloads"),
                ("reserving", "reserving_workloads"),
                ("admitted", "admitted_workloads"),
            ):
                if field in spec and getattr(status, attr) != spec[field]:
                    self.fail(
                        f"LocalQueue {key} {field} {getattr(status, attr)}, expected {spec[field]}"
                    )
            if "active" in spec:
                cond = status.conditions[0]
                want = spec["active"]
                ok = (
                    cond.status == want
                    if isinstance(want, bool)
                    else (not cond.status and cond.reason == want)
                )
                if not ok:
                    self.fail(
                        f"LocalQueue {key} Active {cond.status}/{cond.reason}, expected {want}"
                    )

    def _expect_cohorts(self, value: Mapping[str, Any]) -> None:
        for name, spec in value.items():
            status = self.engine.cohort_status(name)
            if status is None:
                self.fail(f"unknown Cohort {name}")
            assert status is not None
            share = status.weighted_share
            if "weightedShare" in spec and share != spec["weightedShare"]:
                self.fail(f"Cohort {name} weightedShare {share}, want {spec['weightedShare']}")
            if "cycle" in spec:
                has_cycle = any(c.reason == "CohortHasCycle" for c in status.conditions)
                if has_cycle != spec["cycle"]:
                    self.fail(f"Cohort {name} cycle={has_cycle}, expected {spec['cycle']}")

    def _expect_pending(self, value: Mapping[str, Any]) -> None:
        for cq, keys in value.items():
            got = [f"{p.namespace}/{p.name}" for p in self.engine.pending_workloads(cq)]
            if got != list(keys or ()):
                self.fail(f"pending in {cq}: {got}, expected {keys}")

    def _expect_localQueuePositions(self, value: Mapping[str, Any]) -> None:
        for lq, keys in value.items():
            ns, _, name = lq.partition("/")
            got = [
                (f"{p.namespace}/{p.name}", p.position_in_local_queue)
                for p in self.engine.pending_workloads_in_local_queue(ns, name)
            ]
            want = [(k, i) for i, k in enumerate(keys or ())]
            if got != want:
                self.fail(f"pending in LocalQueue {lq}: {got}, expected {want}")

    def _expect_inadmissible(self, value: Mapping[str, Any]) -> None:
        for cq, keys in value.items():
            got = self.engine.inadmissible_workloads(cq)
            if got != sorted(keys or ()):
                self.fail(f"inadmissible in {cq}: {got}, expected {sorted(keys or ())}")

    def _expect_queued(self, value: Mapping[str, Any]) -> None:
        for cq, keys in value.items():
            got = self.engine.queued_workloads(cq)
            if got != sorted(keys or ()):
                self.fail(f"in heap of {cq}: {got}, expected {sorted(keys or ())}")

    def _expect_nextTimer(self, value: Any) -> None:
        got = self.engine.next_timer()
        want = None if value is None else float(value)
        if got != want:
            self.fail(f"next timer {got}, expected {want}")


def run_scenario(path: Path) -> None:
    ScenarioRun(path).run()


FILES = scenario_files()


def test_there_are_enough_scenarios() -> None:
    assert len(FILES) >= 150, f"only {len(FILES)} scenarios under {SCENARIO_ROOT}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(Path(p).relative_to(SCENARIO_ROOT)))
def test_scenario(path: Path) -> None:
    run_scenario(path)

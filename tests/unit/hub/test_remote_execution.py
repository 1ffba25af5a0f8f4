"""A kind without managedBy never starts on the manager while a MultiKueue check guards
its Workload: which checks are MultiKueue's is read from the AdmissionChecks."""

from __future__ import annotations

from typing import Any

from core.kube.object_store import ObjectStore
from core.manager.remote_execution import is_dispatched_copy, runs_on_a_worker


def check(name: str, controller: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"controllerName": controller}}


def workload(*checks: str) -> dict[str, Any]:
    return {"status": {"admissionChecks": [{"name": c, "state": "Ready"} for c in checks]}}


def checks() -> ObjectStore[dict[str, Any]]:
    store: ObjectStore[dict[str, Any]] = ObjectStore()
    store.upsert(check("mk", "kueue.x-k8s.io/multikueue"))
    store.upsert(check("prov", "kueue.x-k8s.io/provisioning-request"))
    return store


def test_a_workload_with_a_multikueue_check_runs_on_a_worker() -> None:
    assert runs_on_a_worker(workload("prov", "mk"), checks())


def test_other_checks_unknown_checks_and_no_checks_run_here() -> None:
    assert not runs_on_a_worker(workload("prov"), checks())
    assert not runs_on_a_worker(workload("gone"), checks())
    assert not runs_on_a_worker(workload(), checks())
    assert not runs_on_a_worker(workload("mk"), None), "no AdmissionCheck cache: a worker"


def test_a_workload_with_the_origin_label_is_a_managers_copy() -> None:
    copy = {"metadata": {"labels": {"kueue.x-k8s.io/multikueue-origin": "hub"}}}
    assert is_dispatched_copy(copy)
    assert not is_dispatched_copy({"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "q"}}})

"""The hub runtime's pure rules, case by case (no cluster needed): version ordering, the
newest-version gate, how a foreign status change is taken in, and the minimal patches."""

from __future__ import annotations

from typing import Any

import pytest

from core.api.local_queue import LocalQueue
from core.engine.model import Admission, Condition, PodSetAssignment, WorkloadStatus
from core.manager.decoded_lookup import DecodedLookup
from core.manager.finalizers import finalizer_patch
from core.manager.queue_status import merge_conditions, queue_status_patch
from core.manager.resource_versions import is_newer
from core.manager.webhook_service import REGISTERED_BY_LABEL, UrlRegistration
from core.manager.webhooks.configurations import mutating_configuration, validating_configuration
from core.manager.workload_decisions import ExternalChange, classify, decision_state
from core.manager.workload_status_patch import owned_status, status_patch
from core.manager.workload_versions import WorkloadVersions
from hub.app import split_bind_address
from integrations.registry import REGISTRY

T0 = "2026-01-01T00:00:00Z"


def wl(name: str, rv: str, status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "ns", "name": name, "resourceVersion": rv},
        "status": status or {},
    }


def cond(type_: str, status: bool, reason: str = "R", message: str = "") -> dict[str, Any]:
    return {
        "type": type_,
        "status": "True" if status else "False",
        "reason": reason,
        "message": message,
        "lastTransitionTime": T0,
    }


ADMISSION = {
    "clusterQueue": "cq",
    "podSetAssignments": [{"name": "main", "flavors": {"cpu": "f"}, "count": 1}],
}


@pytest.mark.parametrize(
    ("candidate", "than", "newer"),
    [
        ("11", "9", True),  # numeric, not lexical
        ("9", "11", False),
        ("7", "7", False),
        ("1", "", True),
        ("", "1", False),
        ("b", "a", True),  # opaque versions: any other one counts as newer
        ("a", "a", False),
    ],
)
def test_resource_versions_are_ordered_as_numbers_when_they_are_numbers(
    candidate: str, than: str, newer: bool
) -> None:
    assert is_newer(candidate, than) is newer


def test_the_version_gate_takes_each_version_once_and_never_an_older_one() -> None:
    cache: dict[str, dict[str, Any]] = {}
    versions = WorkloadVersions(cache.get)
    v5 = wl("a", "5")
    cache["ns/a"] = v5
    assert versions.admit(v5)
    assert not versions.admit(v5)  # same version again (a replayed event)
    assert versions.remember(wl("a", "8"))  # the hub's own write came back with version 8
    assert versions.current("ns/a")["metadata"]["resourceVersion"] == "8"
    assert not versions.admit(wl("a", "7"))  # an older event arriving late is dropped
    assert not versions.admit(wl("a", "8"))  # the echo of the write is not news
    cache["ns/a"] = wl("a", "8")
    assert versions.current("ns/a") is cache["ns/a"]  # the cache caught up
    versions.forget("ns/a")
    del cache["ns/a"]
    assert not versions.remember(wl("a", "9"))  # a late response never resurrects it
    assert versions.current("ns/a") is None


def test_a_fresh_read_is_kept_even_before_the_informer_saw_the_object() -> None:
    versions = WorkloadVersions({}.get)
    assert versions.take(wl("b", "3"))
    assert versions.current("ns/b")["metadata"]["resourceVersion"] == "3"
    assert not versions.take(wl("b", "2"))


def _state(*conditions: dict[str, Any], admission: Any = None, checks: Any = ()) -> Any:
    status: dict[str, Any] = {"conditions": list(conditions), "admissionChecks": list(checks)}
    if admission:
        status["admission"] = admission
    return decision_state(status)


RESERVED = (cond("QuotaReserved", True), cond("Admitted", True))


@pytest.mark.parametrize(
    ("observed", "believed", "expected"),
    [
        (_state(*RESERVED, admission=ADMISSION), _state(*RESERVED, admission=ADMISSION), "none"),
        (
            _state(*RESERVED, cond("Finished", True), admission=ADMISSION),
            _state(*RESERVED, admission=ADMISSION),
            "adopt",
        ),
        (
            _state(cond("QuotaReserved", False), cond("Evicted", True)),
            _state(*RESERVED, cond("Evicted", True), admission=ADMISSION),
            "adopt",
        ),
        (
            _state(*RESERVED, admission=ADMISSION, checks=[{"name": "c", "state": "Ready"}]),
            _state(*RESERVED, admission=ADMISSION, checks=[{"name": "c", "state": "Pending"}]),
            "checks",
        ),
        # Admitted by someone else (the leader, seen from a follower): adopt it.
        (_state(*RESERVED, admission=ADMISSION), _state(cond("QuotaReserved", False)), "adopt"),
        # Reservation cleared without an eviction: adopted too.
        (_state(cond("QuotaReserved", False)), _state(*RESERVED, admission=ADMISSION), "adopt"),
    ],
)
def test_a_foreign_status_change_is_taken_in_by_the_matching_engine_call(
    observed: Any, believed: Any, expected: str
) -> None:
    assert classify(observed, believed) is ExternalChange(expected)


def _engine_status(admitted: bool) -> WorkloadStatus:
    conditions = (
        Condition(
            type="QuotaReserved",
            status=admitted,
            reason="QuotaReserved" if admitted else "Pending",
            message="m",
            last_transition_time=1767225600.0,
        ),
    )
    admission = None
    if admitted:
        admission = Admission(
            cluster_queue="cq",
            pod_set_assignments=(
                PodSetAssignment(
                    name="main", flavors={"cpu": "f"}, resource_usage={"cpu": 1000}, count=1
                ),
            ),
        )
    return WorkloadStatus(conditions=conditions, admission=admission)


def test_the_status_patch_names_only_what_differs_and_nulls_what_the_engine_dropped() -> None:
    admitted = owned_status(_engine_status(True))
    assert status_patch({}, admitted) == {
        "conditions": admitted["conditions"],
        "admission": admitted["admission"],
    }
    current = {**admitted, "clusterName": "worker-1"}
    assert status_patch(current, admitted) is None  # nothing to write, others' fields kept
    pending = owned_status(_engine_status(False))
    patch = status_patch(current, pending)
    assert patch is not None and patch["admission"] is None
    assert "clusterName" not in patch


def test_condition_order_does_not_make_a_status_differ() -> None:
    a, b = cond("QuotaReserved", True), cond("Admitted", True)
    assert status_patch({"conditions": [a, b]}, {"conditions": [b, a]}) is None
    assert status_patch({"conditions": [a]}, {"conditions": [a, b]}) is not None


def test_finalizer_patches_carry_the_version_and_only_when_needed() -> None:
    obj = {"metadata": {"name": "x", "resourceVersion": "4", "finalizers": ["other"]}}
    assert finalizer_patch(obj, "mine", present=True) == {
        "metadata": {"resourceVersion": "4", "finalizers": ["other", "mine"]}
    }
    assert finalizer_patch(obj, "other", present=False) == {
        "metadata": {"resourceVersion": "4", "finalizers": None}
    }
    assert finalizer_patch(obj, "other", present=True) is None
    assert finalizer_patch(obj, "mine", present=False) is None


def test_queue_conditions_keep_their_transition_time_while_their_status_holds() -> None:
    current = {"conditions": [cond("Active", True, "Ready", "old message")]}
    wanted = [
        {**cond("Active", True, "Ready", "new"), "lastTransitionTime": "2027-01-01T00:00:00Z"}
    ]
    merged = merge_conditions(current, wanted, 3)
    assert merged[0]["lastTransitionTime"] == T0
    assert merged[0]["observedGeneration"] == 3
    flipped = merge_conditions(current, [{**wanted[0], "status": "False"}], 3)
    assert flipped[0]["lastTransitionTime"] == "2027-01-01T00:00:00Z"
    assert (
        queue_status_patch(
            {"conditions": merged, "pendingWorkloads": 2},
            {
                "conditions": merged,
                "pendingWorkloads": 2,
                "fairSharing": None,
            },
        )
        is None
    )


@pytest.mark.parametrize(
    ("address", "expected"),
    [(":8081", ("", 8081)), ("0.0.0.0:8443", ("0.0.0.0", 8443)), ("[::1]:80", ("[::1]", 80))],
)
def test_bind_addresses_split_into_host_and_port(address: str, expected: tuple[str, int]) -> None:
    assert split_bind_address(address) == expected


class _Store:
    def __init__(self) -> None:
        self.items: dict[str, dict[str, Any]] = {}

    def get_by_name(self, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        return self.items.get(f"{namespace}/{name}" if namespace else name)


def _local_queue(rv: str, cluster_queue: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "lq", "namespace": "ns", "resourceVersion": rv},
        "spec": {"clusterQueue": cluster_queue},
    }


def test_a_decoded_lookup_decodes_once_per_version_and_reads_broken_objects_as_absent() -> None:
    store = _Store()
    lookup = DecodedLookup(store, LocalQueue)
    assert lookup.get_by_name("lq", "ns") is None
    store.items["ns/lq"] = _local_queue("1", "cq-a")
    first = lookup.get_by_name("lq", "ns")
    assert first is not None and first.spec.cluster_queue == "cq-a"
    assert lookup.get_by_name("lq", "ns") is first  # same version: not decoded again
    store.items["ns/lq"] = _local_queue("2", "cq-b")
    second = lookup.get_by_name("lq", "ns")
    assert second is not None and second.spec.cluster_queue == "cq-b"
    store.items["ns/lq"] = _local_queue("3", {"not": "a name"})
    assert lookup.get_by_name("lq", "ns") is None
    del store.items["ns/lq"]
    assert lookup.get_by_name("lq", "ns") is None


def test_a_url_registration_points_every_webhook_at_the_hub_and_marks_it_as_its_own() -> None:
    registration = UrlRegistration("127.0.0.1", mutating_name="m", validating_name="v")
    kinds = REGISTRY.enabled(["batch/job", "jobset.x-k8s.io/jobset"])
    settings = registration.settings(9443, "hub-ns", b"PEM", tuple(k.resource for k in kinds))
    assert [target.name for target in registration.targets] == ["m", "v"]
    mutating = [w["name"] for w in mutating_configuration(settings)["webhooks"]]
    assert mutating == ["mjob.fleetq.dev", "mjobset.fleetq.dev"]
    for configuration in (mutating_configuration(settings), validating_configuration(settings)):
        assert configuration["metadata"]["labels"] == {REGISTERED_BY_LABEL: "fleetq-hub-url"}
        for webhook in configuration["webhooks"]:
            assert webhook["clientConfig"]["url"].startswith("https://127.0.0.1:9443/")
            assert webhook["clientConfig"]["caBundle"] == "UEVN"  # base64 of the PEM

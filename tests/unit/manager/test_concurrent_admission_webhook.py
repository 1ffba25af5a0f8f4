"""The ClusterQueue webhook's ConcurrentAdmission rules (upstream checks them only with its
gate on): one resource group, at most 16 flavors, constraints only under
TryPreferredFlavors and naming a flavor of the queue, no StrictFIFO, and the policy
immutable; with the gate off none applies."""

from __future__ import annotations

from typing import Any

from core.api.registry import kind_info
from core.manager.webhooks.kueue_review import gated_rules, review_kueue_object
from tests.builders import ClusterQueue, FlavorQuotas

POLICY = {"migration": {"mode": "TryPreferredFlavors"}}


def _queue(*groups: list[str], **spec: Any) -> dict[str, Any]:
    """A ClusterQueue with a resource group per list of flavors (cpu, then memory, ...)."""
    queue = ClusterQueue("cq")
    for resource, flavors in zip(("cpu", "memory"), groups, strict=False):
        queue.resource_group(*(FlavorQuotas(f).resource(resource, "1") for f in flavors))
    return queue.spec(**spec).obj()


def _review(obj: dict[str, Any], old: dict[str, Any] | None = None, *, gate: bool = True) -> Any:
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u1",
            "operation": "UPDATE" if old is not None else "CREATE",
            "object": obj,
            "oldObject": old,
        },
    }
    answer = review_kueue_object(
        kind_info("ClusterQueue"), review, gated_rules(concurrent_admission=gate)
    )["response"]
    return answer["allowed"], (answer.get("status") or {}).get("message", "")


def test_a_valid_policy_is_allowed() -> None:
    assert _review(_queue(["a", "b"], concurrentAdmissionPolicy=POLICY)) == (True, "")


def test_several_resource_groups_are_refused_with_the_gate_and_allowed_without() -> None:
    queue = _queue(["a"], ["b"], concurrentAdmissionPolicy=POLICY)
    allowed, message = _review(queue)
    assert not allowed and "must have exactly one ResourceGroup" in message
    assert _review(queue, gate=False)[0]


def test_constraints_need_try_preferred_flavors_and_a_flavor_of_the_queue() -> None:
    retain = {
        "migration": {
            "mode": "RetainFirstAdmission",
            "constraints": {"lastAcceptableFlavorName": "a"},
        }
    }
    allowed, message = _review(_queue(["a", "b"], concurrentAdmissionPolicy=retain))
    assert not allowed and "may only be set when migration.mode" in message
    unknown = {
        "migration": {
            "mode": "TryPreferredFlavors",
            "constraints": {"lastAcceptableFlavorName": "z"},
        }
    }
    allowed, message = _review(_queue(["a", "b"], concurrentAdmissionPolicy=unknown))
    assert not allowed and "must be one of the flavors" in message


def test_strict_fifo_and_too_many_flavors_are_refused() -> None:
    allowed, message = _review(
        _queue(["a"], concurrentAdmissionPolicy=POLICY, queueingStrategy="StrictFIFO")
    )
    assert not allowed and "StrictFIFO" in message
    many = [f"f{i}" for i in range(17)]
    allowed, message = _review(_queue(many, concurrentAdmissionPolicy=POLICY))
    assert not allowed and "more than 16 resource flavors" in message


def test_the_policy_is_immutable() -> None:
    old = _queue(["a", "b"], concurrentAdmissionPolicy=POLICY)
    new = _queue(
        ["a", "b"], concurrentAdmissionPolicy={"migration": {"mode": "RetainFirstAdmission"}}
    )
    allowed, message = _review(new, old)
    assert not allowed and "immutable" in message
    assert _review(new, old, gate=False)[0]

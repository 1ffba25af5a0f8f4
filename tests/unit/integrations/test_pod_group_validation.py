"""The Pod webhook's pod-group label rules: a valid group name, a prebuilt Workload that
is the group's, and a group name that may be added but never changed or removed."""

from __future__ import annotations

from typing import Any

from integrations.framework.webhook_context import WebhookContext
from integrations.pod.kind import POD
from tests.builders import Pod


def _messages(errors: list[Any]) -> str:
    return "; ".join(str(e) for e in errors)


def test_a_group_name_is_an_object_name_and_a_prebuilt_workload_must_be_the_group() -> None:
    ctx = WebhookContext()
    bad_name = Pod("p").group("Group_A", 2).obj()
    assert "RFC 1123 subdomain" in _messages(POD.validate_create(bad_name, ctx))
    other = Pod("p").group("g", 2).label("kueue.x-k8s.io/prebuilt-workload-name", "w").obj()
    assert "prebuilt workload and pod group should be equal" in _messages(
        POD.validate_create(other, ctx)
    )
    same = Pod("p").group("g", 2).label("kueue.x-k8s.io/prebuilt-workload-name", "g").obj()
    assert POD.validate_create(same, ctx) == []


def test_a_group_name_may_be_added_later_with_its_count_but_never_changed_or_removed() -> None:
    ctx = WebhookContext()
    single = Pod("p").obj()
    assert POD.validate_update(single, Pod("p").group("g", 2).obj(), ctx) == []
    label_only = Pod("p").label("kueue.x-k8s.io/pod-group-name", "g").obj()
    assert "pod-group-total-count" in _messages(POD.validate_update(single, label_only, ctx))
    assert "field is immutable" in _messages(
        POD.validate_update(Pod("p").group("g", 2).obj(), single, ctx)
    )


def test_the_group_name_may_be_an_annotation_as_upstream_writes_it_since_v0_18() -> None:
    ctx = WebhookContext()
    gated = Pod("pod-0").annotation("kueue.x-k8s.io/pod-suspending-parent", "Other").obj()
    old = POD.default(gated, ctx)
    new = POD.default(gated, ctx)
    new["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-name"] = "test-group"
    new["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"] = "1"
    new["metadata"]["labels"] = {
        "kueue.x-k8s.io/queue-name": "lq",
        "kueue.x-k8s.io/managed": "true",
    }
    assert POD.validate_update(old, new, ctx) == [], "group names added later are accepted"
    assert POD.composed_name(new) == "test-group"
    bad = Pod("p").annotation("kueue.x-k8s.io/pod-group-name", "Bad_Name")
    bad = bad.annotation("kueue.x-k8s.io/pod-group-total-count", "1").obj()
    assert "RFC 1123 subdomain" in _messages(POD.validate_create(bad, ctx))

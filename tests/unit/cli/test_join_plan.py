"""Judging an apply (created / changed / unchanged) and deciding whether to re-mint a token."""

from __future__ import annotations

import base64
import io
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from rich.console import Console

from cli.join.apply_outcome import Outcome, changed_fields, classify
from cli.join.join_console import JoinConsole
from cli.join.join_report import (
    JoinEvent,
    JoinReport,
    Notice,
    NoticeLevel,
    ObjectResult,
    TokenAction,
    TokenResult,
)
from cli.join.manager_objects import TOKEN_EXPIRY_ANNOTATION, TOKEN_SUBJECT_ANNOTATION
from cli.join.minted_kubeconfig import build_worker_kubeconfig, render_kubeconfig
from cli.join.token_rotation import MintReason, TokenDecision, decide_token

NOW = datetime(2026, 1, 10, tzinfo=UTC)
SUBJECT = "system:serviceaccount:fleetq-system:fleetq-multikueue"
WEEK = timedelta(days=7)


def stored(spec: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "MultiKueueConfig",
        "metadata": {"name": "fleet", **metadata},
        "spec": spec,
    }


def test_a_missing_object_is_created() -> None:
    assert classify(None, stored({"clusters": ["a"]})) is Outcome.CREATED


def test_server_bookkeeping_and_status_do_not_count_as_change() -> None:
    before = stored(
        {"clusters": ["a"]},
        resourceVersion="10",
        managedFields=[{"manager": "kubectl"}],
        generation=1,
    )
    after = stored(
        {"clusters": ["a"]},
        resourceVersion="11",
        managedFields=[{"manager": "kubectl"}, {"manager": "fleetq-join"}],
        generation=1,
    )
    after["status"] = {"conditions": [{"type": "Active"}]}
    assert classify(before, after) is Outcome.UNCHANGED
    assert changed_fields(before, after) == []


def test_a_changed_spec_names_the_fields_that_differ() -> None:
    before = stored({"clusters": ["a", "b"]}, labels={"x": "1"})
    after = stored({"clusters": ["b", "a"]}, labels={"x": "1", "y": "2"})
    assert classify(before, after) is Outcome.CHANGED
    assert changed_fields(before, after) == ["metadata.labels.y", "spec.clusters"]


def jwt(uid: str) -> str:
    claims = {"kubernetes.io": {"serviceaccount": {"name": "fleetq-multikueue", "uid": uid}}}
    payload = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    return f"eyJhbGciOiJSUzI1NiJ9.{payload}.sig"


def secret(token: str, expires: datetime | str | None, subject: str = SUBJECT) -> dict[str, Any]:
    text = render_kubeconfig(
        build_worker_kubeconfig(
            worker="w1", server="https://10.0.0.1", ca_data="Q0E=", token=token, user="sa"
        )
    )
    annotations = {TOKEN_SUBJECT_ANNOTATION: subject}
    if expires is not None:
        annotations[TOKEN_EXPIRY_ANNOTATION] = (
            expires if isinstance(expires, str) else expires.strftime("%Y-%m-%dT%H:%M:%SZ")
        )
    return {
        "metadata": {"name": "w1-kubeconfig", "annotations": annotations},
        "data": {"kubeconfig": base64.b64encode(text.encode()).decode()},
    }


def decide(
    stored_secret: dict[str, Any] | None, *, uid: str | None = "uid-1", rotate: bool = False
) -> TokenDecision:
    return decide_token(
        stored_secret, subject=SUBJECT, account_uid=uid, now=NOW, rotate=rotate, rotate_before=WEEK
    )


def test_a_valid_token_is_kept_so_a_rerun_changes_nothing() -> None:
    token = jwt("uid-1")
    decision = decide(secret(token, NOW + timedelta(days=20)))
    assert not decision.mint
    assert decision.token == token
    assert decision.expires_at == NOW + timedelta(days=20)
    assert not decision.rotation_due


def test_a_token_due_for_rotation_is_kept_with_a_warning_unless_rotating() -> None:
    due = secret(jwt("uid-1"), NOW + timedelta(days=3))
    kept = decide(due)
    assert not kept.mint and kept.rotation_due
    assert decide(due, rotate=True).mint_reason is MintReason.ROTATION_DUE
    # --rotate leaves tokens outside the window alone.
    assert not decide(secret(jwt("uid-1"), NOW + timedelta(days=8)), rotate=True).mint


def test_tokens_that_cannot_work_are_always_replaced() -> None:
    good = jwt("uid-1")
    cases = {
        MintReason.NO_SECRET: decide(None),
        MintReason.NO_ACCOUNT: decide(secret(good, NOW + WEEK * 2), uid=None),
        MintReason.OTHER_IDENTITY: decide(secret(good, NOW + WEEK * 2, subject="someone")),
        MintReason.UNREADABLE: decide(secret(good, "not-a-time")),
        MintReason.ACCOUNT_REPLACED: decide(secret(jwt("uid-0"), NOW + WEEK * 2)),
        MintReason.EXPIRED: decide(secret(good, NOW - timedelta(seconds=1))),
    }
    for reason, decision in cases.items():
        assert decision.mint_reason is reason, reason


def test_a_dry_run_plan_says_would_and_the_summary_counts_per_cluster() -> None:
    output = io.StringIO()
    view = JoinConsole(Console(file=output, width=200), dry_run=True, now=NOW)
    report = JoinReport(dry_run=True, dispatcher="fleetq.dev/capacity-aware")
    events: list[JoinEvent] = [
        ObjectResult("w1", "Namespace fleetq-system", Outcome.CREATED),
        ObjectResult("w1", "ClusterRole r", Outcome.CHANGED, ("rules",)),
        TokenResult("w1", TokenAction.WOULD_MINT, MintReason.EXPIRED, NOW + timedelta(days=30)),
        ObjectResult("manager", "Secret hub/w1-kubeconfig", Outcome.CHANGED, ("data.kubeconfig",)),
        ObjectResult("manager", "MultiKueueConfig fleet", Outcome.UNCHANGED),
        Notice("w2", NoticeLevel.ERROR, "w2: cannot reach the API server"),
    ]
    for event in events:
        report.record(event)
        view.event(event)
    view.summary(report)
    text = output.getvalue()
    assert "would create Namespace fleetq-system" in text
    assert "would change ClusterRole r  (rules)" in text
    assert "would mint: the token has expired" in text
    assert "would rotate tokens of: w1" in text
    assert "1 problem(s)" in text
    assert report.outcomes("manager") == {Outcome.CHANGED: 1, Outcome.UNCHANGED: 1}
    assert report.clusters() == ["w1", "manager", "w2"]
    assert not report.ok
    assert "data.kubeconfig" in text and "Q0E=" not in text

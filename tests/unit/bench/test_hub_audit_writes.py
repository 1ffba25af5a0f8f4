"""Writes are counted per client from audit events, inside the recorded window only."""

from __future__ import annotations

import datetime as dt
import json

from bench.scheduler.audit_writes import parse_audit_line, tally_writes


def _line(
    verb: str,
    agent: str,
    resource: str,
    subresource: str = "",
    code: int = 200,
    at: str = "2026-11-29T20:21:00.000000Z",
    stage: str = "ResponseComplete",
) -> str:
    ref = {"resource": resource, "namespace": "ns", "name": "w", "apiVersion": "v1beta2"}
    if subresource:
        ref["subresource"] = subresource
    return json.dumps(
        {
            "kind": "Event",
            "apiVersion": "audit.k8s.io/v1",
            "level": "Metadata",
            "stage": stage,
            "verb": verb,
            "userAgent": agent,
            "objectRef": ref,
            "responseStatus": {"metadata": {}, "code": code},
            "stageTimestamp": at,
        }
    )


def test_a_status_patch_keeps_its_subresource() -> None:
    write = parse_audit_line(_line("patch", "fleetq/0.1", "workloads", "status"))
    assert write is not None
    assert (write.verb, write.resource, write.succeeded) == ("patch", "workloads/status", True)
    assert write.at == dt.datetime(2026, 11, 29, 20, 21, tzinfo=dt.UTC)


def test_reads_other_stages_and_garbage_are_not_writes() -> None:
    assert parse_audit_line(_line("get", "fleetq/0.1", "workloads")) is None
    assert parse_audit_line(_line("patch", "fleetq/0.1", "workloads", stage="Panic")) is None
    assert parse_audit_line("not json at all") is None


def test_tally_counts_one_client_inside_the_window() -> None:
    lines = [
        _line("patch", "fleetq/0.1", "workloads", "status", at="2026-11-29T20:21:00Z"),
        _line("patch", "fleetq/0.1", "workloads", "status", code=409, at="2026-11-29T20:21:01Z"),
        _line("create", "fleetq/0.1", "events", at="2026-11-29T20:21:02Z"),
        _line("create", "runner/v0.0.0 (linux/amd64)", "workloads", at="2026-11-29T20:21:02Z"),
        _line("delete", "fleetq/0.1", "clusterqueues", at="2026-11-29T20:30:00Z"),  # clean-up
    ]
    writes = [w for w in map(parse_audit_line, lines) if w is not None]
    window = {
        "since": dt.datetime(2026, 11, 29, 20, 20, tzinfo=dt.UTC),
        "until": dt.datetime(2026, 11, 29, 20, 25, tzinfo=dt.UTC),
    }
    fleetq = tally_writes(writes, agent_prefix="fleetq/", **window)
    assert fleetq.by_kind == {"create events": 1, "patch workloads/status": 2}
    assert (fleetq.total, fleetq.failed) == (3, 1)
    assert tally_writes(writes, agent_prefix="runner/", **window).total == 1

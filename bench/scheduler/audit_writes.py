"""Counts apiserver writes per client from the apiserver's audit log.

Writes are what limits a queueing manager (DESIGN §5), and the two managers count them
differently (or not at all), so the benchmark asks the apiserver instead: a Metadata-level
audit policy for write verbs only, one JSON event per finished request. The user agent
tells the clients apart (`minimalkueue/...`, `fleetq/...`, the runner's `runner/...`), and
the timestamps let the benchmark count only the recorded run, not the runner's clean-up.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import msgspec

WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")

AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
    verbs: [{verbs}]
  - level: None
""".format(verbs=", ".join(WRITE_VERBS))
"""Metadata (no bodies) for writes, nothing for reads: cheap enough not to skew the run."""


class _ObjectRef(msgspec.Struct):
    resource: str = ""
    subresource: str = ""


class _ResponseStatus(msgspec.Struct):
    code: int = 0


class _AuditEvent(msgspec.Struct, rename="camel"):
    verb: str = ""
    stage: str = ""
    user_agent: str = ""
    object_ref: _ObjectRef | None = None
    response_status: _ResponseStatus | None = None
    stage_timestamp: dt.datetime | None = None


_decoder = msgspec.json.Decoder(_AuditEvent)


@dataclass(frozen=True, slots=True)
class AuditedWrite:
    """One write request as the apiserver finished it."""

    user_agent: str
    verb: str
    resource: str
    """`workloads`, or with its subresource: `workloads/status`."""
    code: int
    at: dt.datetime

    @property
    def succeeded(self) -> bool:
        return 200 <= self.code < 300


def parse_audit_line(line: str | bytes) -> AuditedWrite | None:
    """The write in one audit line, or None (a read, another stage, or not an event)."""
    try:
        event = _decoder.decode(line)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if event.verb not in WRITE_VERBS or event.stage != "ResponseComplete":
        return None
    if event.stage_timestamp is None:
        return None
    ref = event.object_ref or _ObjectRef()
    resource = f"{ref.resource}/{ref.subresource}" if ref.subresource else ref.resource
    code = event.response_status.code if event.response_status else 0
    return AuditedWrite(event.user_agent, event.verb, resource, code, event.stage_timestamp)


def read_audit_log(paths: Iterable[Path]) -> Iterator[AuditedWrite]:
    for path in paths:
        with path.open("rb") as lines:
            for line in lines:
                write = parse_audit_line(line)
                if write is not None:
                    yield write


@dataclass(frozen=True, slots=True)
class WriteTally:
    """Writes of one client inside a time window, by `verb resource`."""

    by_kind: dict[str, int]
    failed: int

    @property
    def total(self) -> int:
        return sum(self.by_kind.values())


def tally_writes(
    writes: Iterable[AuditedWrite],
    *,
    agent_prefix: str,
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
) -> WriteTally:
    """Count the writes whose user agent starts with `agent_prefix` in [since, until]."""
    counts: Counter[str] = Counter()
    failed = 0
    for write in writes:
        if not write.user_agent.startswith(agent_prefix):
            continue
        if (since is not None and write.at < since) or (until is not None and write.at > until):
            continue
        counts[f"{write.verb} {write.resource}"] += 1
        failed += not write.succeeded
    return WriteTally(dict(sorted(counts.items())), failed)

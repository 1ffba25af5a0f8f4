"""The `Reporting` condition of a WorkerCapacity: is the agent behind it alive and current?

The hub trusts a report only while its agent says Reporting=True and the report is fresh
(`core.engine.dispatch.capacity_snapshot`). The agent says True on every report it writes
and, on a clean shutdown, False, so the hub stops placing work by a report that is about
to go stale instead of waiting out the freshness bound. The transition time only moves
when the status flips, as with every Kubernetes condition.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from datetime import datetime

from core.api.meta import Condition, ConditionStatus
from core.api.worker_capacity import WorkerCapacityConditionType


class ReportingReason(enum.StrEnum):
    """Why the Reporting condition has its status."""

    AGENT_RUNNING = "AgentRunning"
    """The agent is running and writes the report on change and on its heartbeat."""
    AGENT_STOPPED = "AgentStopped"
    """The agent stopped cleanly; the report is its last and will not be updated."""


_MESSAGES = {
    ReportingReason.AGENT_RUNNING: "the worker agent keeps this report current",
    ReportingReason.AGENT_STOPPED: "the worker agent stopped; this report is no longer updated",
}


def reporting_condition(
    reason: ReportingReason, now: datetime, previous: Sequence[Condition] = ()
) -> Condition:
    """The Reporting condition for `reason`, keeping the transition time if status is unchanged."""
    status = (
        ConditionStatus.TRUE if reason is ReportingReason.AGENT_RUNNING else ConditionStatus.FALSE
    )
    since = now.replace(microsecond=0)
    for condition in previous:
        if condition.type == WorkerCapacityConditionType.REPORTING and condition.status == status:
            since = condition.last_transition_time
    return Condition(
        type=WorkerCapacityConditionType.REPORTING,
        status=status,
        reason=reason,
        message=_MESSAGES[reason],
        last_transition_time=since,
    )

"""The `Active` condition of MultiKueueClusters and MultiKueue AdmissionChecks, as upstream's.

Dashboards and alerts match on these reasons and on parts of the messages, so both are
spelled exactly as upstream Kueue writes them. A condition is rewritten only when its
status, reason or message change (upstream's rule): the observed generation alone never
causes a write, and an unchanged status keeps its lastTransitionTime.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from core.api.kube_time import format_time
from core.api.meta import Condition, ConditionStatus

ACTIVE: str = "Active"
"""The only condition type either kind carries."""


class ClusterActiveReason(enum.StrEnum):
    """Why a MultiKueueCluster is (not) Active."""

    ACTIVE = "Active"
    BAD_KUBE_CONFIG = "BadKubeConfig"
    """Misconfigured: Secret, key or file missing, path not allowed, unparsable content."""
    INSECURE_KUBE_CONFIG = "InsecureKubeConfig"
    """Misconfigured: the kubeconfig asks for something a hub must not do (exec, files...)."""
    CLIENT_CONNECTION_FAILED = "ClientConnectionFailed"
    """Unreachable: the kubeconfig is fine but the worker did not answer; retried."""
    CLUSTER_PROFILE_UNSUPPORTED = "MultiKueueClusterProfileFeatureDisabled"
    """A clusterProfileRef source: upstream's answer while its (alpha) gate is off."""


class CheckActiveReason(enum.StrEnum):
    """Why a MultiKueue AdmissionCheck is (not) Active."""

    ACTIVE = "Active"
    SOME_ACTIVE_CLUSTERS = "SomeActiveClusters"
    NO_USABLE_CLUSTERS = "NoUsableClusters"
    BAD_CONFIG = "BadConfig"


CONNECTED_MESSAGE = "Connected"
CHECK_ACTIVE_MESSAGE = "The admission check is active"
LOAD_FAILED_PREFIX = "load client config failed: "


@dataclass(frozen=True, slots=True)
class ActiveState:
    """What the Active condition should say."""

    status: ConditionStatus
    reason: str
    message: str


def cluster_connected() -> ActiveState:
    return ActiveState(ConditionStatus.TRUE, ClusterActiveReason.ACTIVE, CONNECTED_MESSAGE)


def cluster_misconfigured(reason: ClusterActiveReason, detail: str) -> ActiveState:
    """A kubeconfig that cannot be used as it is; nothing is retried until it changes."""
    return ActiveState(ConditionStatus.FALSE, reason, LOAD_FAILED_PREFIX + detail)


def cluster_unreachable(error: str, attempts: int, next_attempt: datetime) -> ActiveState:
    """A worker that did not answer; the message says how often and when it is retried."""
    message = (
        f"{error}; connection attempts: {attempts}, "
        f"next connection attempt: {format_time(next_attempt)}"
    )
    return ActiveState(ConditionStatus.FALSE, ClusterActiveReason.CLIENT_CONNECTION_FAILED, message)


def go_list(names: Iterable[str]) -> str:
    """A list of names as Go's `%v` prints a []string: `[a b c]` (upstream's messages)."""
    return "[" + " ".join(names) + "]"


def find_condition(conditions: Sequence[Condition], type_: str) -> Condition | None:
    return next((condition for condition in conditions if condition.type == type_), None)


def holds(conditions: Sequence[Condition], wanted: ActiveState, type_: str = ACTIVE) -> bool:
    """Whether the conditions already say `wanted` (status, reason and message)."""
    current = find_condition(conditions, type_)
    return current is not None and (current.status, current.reason, current.message) == (
        wanted.status,
        wanted.reason,
        wanted.message,
    )


def with_condition(
    conditions: Sequence[Condition],
    wanted: ActiveState,
    *,
    generation: int,
    now: datetime,
    type_: str = ACTIVE,
) -> list[Condition] | None:
    """The conditions with `type_` set to `wanted`, or None when they already say it.

    The transition time moves only when the status flips; other types are kept as they are.
    """
    if holds(conditions, wanted, type_):
        return None
    current = find_condition(conditions, type_)
    changed_at = now.astimezone(UTC).replace(microsecond=0)
    if current is not None and current.status == wanted.status:
        changed_at = current.last_transition_time
    updated = Condition(
        type=type_,
        status=wanted.status,
        reason=wanted.reason,
        message=wanted.message,
        last_transition_time=changed_at,
        observed_generation=generation or None,
    )
    kept = [condition for condition in conditions if condition.type != type_]
    return [*kept, updated]

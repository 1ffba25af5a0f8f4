"""What manager quota automation wants of one ClusterQueue (pure: no I/O).

Upstream v0.19's MultiKueueManagerQuotaAutomation (an alpha gate, off by default): a
manager ClusterQueue whose MultiKueue check's MultiKueueConfig says
`quotaManagement: Automated` gets, as its nominal quota, the sum of the nominal quotas of
the worker ClusterQueues its LocalQueues feed on the connected workers (a worker
LocalQueue counts when a manager LocalQueue of the same namespace and name points at this
ClusterQueue). The manager queue must have exactly one resource group with one flavor,
and cover every resource the workers have quota for. The outcome is told in the
`MultiKueueManagerQuotaAutomation` condition, with upstream's reasons and messages.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from core.api.meta import ConditionStatus
from core.api.quantity import QuantityError, format_quantity, parse_quantity

Json = Mapping[str, Any]

AUTOMATED = "Automated"
REASON_AUTOMATED = "QuotaAutomated"
REASON_NOT_REQUESTED = "NotRequested"
REASON_UNSUPPORTED = "UnsupportedConfiguration"
MESSAGE_AUTOMATED = "ClusterQueue quota is automatically managed based on MultiKueue workers."
MESSAGE_NOT_REQUESTED = "MultiKueue manager quota automation has not been requested."
MESSAGE_CONFIG_MISSING = "The referenced MultiKueueConfig was not found."
MESSAGE_ONE_FLAVOR = (
    "Quota automation requires that the manager-side ClusterQueue has exactly one ResourceFlavor"
)
MESSAGE_SET = (
    "Quota automation is set on a MultiKueueConfig; a MultiKueueClusterSet does not request it."
)


@dataclass(frozen=True, slots=True)
class WantedCondition:
    status: ConditionStatus
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class WorkerQueues:
    """What one connected worker holds: its LocalQueues (namespace, name → ClusterQueue)
    and its ClusterQueues' manifests by name."""

    local_queues: Mapping[tuple[str, str], str]
    cluster_queues: Mapping[str, Json]


@dataclass(frozen=True, slots=True)
class QuotaPlan:
    """`condition` None: remove the condition (not a MultiKueue manager queue);
    `resource_groups` None: leave the spec alone."""

    condition: WantedCondition | None
    resource_groups: list[dict[str, Any]] | None = None


def _false(reason: str, message: str) -> QuotaPlan:
    return QuotaPlan(WantedCondition(ConditionStatus.FALSE, reason, message))


def precondition(
    *, has_multikueue_check: bool, config: Json | None, is_config: bool, cluster_queue: Json
) -> QuotaPlan | None:
    """The plan when automation cannot or need not run, else None (then aggregate)."""
    if not has_multikueue_check:
        return QuotaPlan(None)
    if not is_config:
        return _false(REASON_NOT_REQUESTED, MESSAGE_SET)
    if config is None:
        return _false(REASON_UNSUPPORTED, MESSAGE_CONFIG_MISSING)
    if ((config.get("spec") or {}).get("quotaManagement") or "Manual") != AUTOMATED:
        return _false(REASON_NOT_REQUESTED, MESSAGE_NOT_REQUESTED)
    groups = (cluster_queue.get("spec") or {}).get("resourceGroups") or []
    if len(groups) != 1 or len(groups[0].get("flavors") or []) != 1:
        return _false(REASON_UNSUPPORTED, MESSAGE_ONE_FLAVOR)
    return None


def aggregate(
    manager_local_queues: Iterable[tuple[str, str]], workers: Iterable[WorkerQueues]
) -> dict[str, Fraction]:
    """Nominal quota per resource, summed over the worker queues fed by these LocalQueues.

    A quantity that does not parse is left out (the worker's apiserver validated it, so
    this only guards against a schema that differs)."""
    wanted = set(manager_local_queues)
    total: dict[str, Fraction] = {}
    for worker in workers:
        fed = {cq for key, cq in worker.local_queues.items() if key in wanted and cq}
        for name in sorted(fed):
            manifest = worker.cluster_queues.get(name)
            if manifest is None:
                continue
            for group in (manifest.get("spec") or {}).get("resourceGroups") or ():
                for flavor in group.get("flavors") or ():
                    for resource in flavor.get("resources") or ():
                        try:
                            amount = parse_quantity(str(resource.get("nominalQuota", "0")))
                        except QuantityError:
                            continue
                        key = str(resource.get("name"))
                        total[key] = total.get(key, Fraction(0)) + amount
    return total


def plan_quotas(cluster_queue: Json, totals: Mapping[str, Fraction]) -> QuotaPlan:
    """The single flavor's resources set to the totals (0 where the workers have none)."""
    groups = (cluster_queue.get("spec") or {}).get("resourceGroups") or []
    group = groups[0]
    covered: Sequence[str] = [str(name) for name in group.get("coveredResources") or ()]
    missing = sorted(set(totals) - set(covered))
    if missing:
        return _false(
            REASON_UNSUPPORTED,
            "manager-side coveredResources is missing resources configured on workers: "
            f"[{' '.join(missing)}]",
        )
    flavor = dict(group["flavors"][0])
    current = {str(r.get("name")): r for r in flavor.get("resources") or ()}
    resources = []
    for name in covered:
        amount = totals.get(name, Fraction(0))
        entry = dict(current.get(name) or {"name": name})
        entry["nominalQuota"] = _shortest(amount)
        resources.append(entry)
    automated = WantedCondition(ConditionStatus.TRUE, REASON_AUTOMATED, MESSAGE_AUTOMATED)
    if _same_quotas(flavor.get("resources") or (), resources):
        return QuotaPlan(automated)
    flavor["resources"] = resources
    new_group = dict(group)
    new_group["flavors"] = [flavor]
    return QuotaPlan(automated, [new_group])


def _shortest(amount: Fraction) -> str:
    """The shorter of the decimal and binary spellings ("2G", not "1953125Ki"; "1Gi")."""
    decimal, binary = str(format_quantity(amount)), str(format_quantity(amount, binary=True))
    return binary if len(binary) < len(decimal) else decimal


def _same_quotas(current: Iterable[Json], wanted: Sequence[Json]) -> bool:
    def key(entries: Iterable[Json]) -> list[tuple[str, Fraction | None, str]]:
        out = []
        for entry in entries:
            try:
                amount: Fraction | None = parse_quantity(str(entry.get("nominalQuota", "0")))
            except QuantityError:
                amount = None
            rest = repr(
                sorted((k, v) for k, v in entry.items() if k not in ("name", "nominalQuota"))
            )
            out.append((str(entry.get("name")), amount, rest))
        return out

    return key(current) == key(wanted)

"""Manager quota automation, decision by decision: which worker queues count, the sum, the
refusals (upstream's reasons), and the condition written beside the engine's Active."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from core.api.meta import ConditionStatus
from core.manager.feature_gates import parse_feature_gates
from core.manager.queue_status import merge_conditions
from hub.multikueue.quota_automation.controller import CONDITION, conditions_with
from hub.multikueue.quota_automation.plan import (
    REASON_AUTOMATED,
    REASON_NOT_REQUESTED,
    REASON_UNSUPPORTED,
    WantedCondition,
    WorkerQueues,
    aggregate,
    plan_quotas,
    precondition,
)

RESOURCES = ("cpu", "memory", "nvidia.com/gpu")
NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)


def cluster_queue(
    quotas: dict[str, str], *, covered: tuple[str, ...] = RESOURCES, flavors: int = 1
) -> dict[str, Any]:
    return {
        "metadata": {"name": "cq", "generation": 3},
        "spec": {
            "resourceGroups": [
                {
                    "coveredResources": list(covered),
                    "flavors": [
                        {
                            "name": f"f{i}",
                            "resources": [
                                {"name": name, "nominalQuota": value}
                                for name, value in quotas.items()
                            ],
                        }
                        for i in range(flavors)
                    ],
                }
            ]
        },
    }


def worker(lqs: dict[tuple[str, str], str], cqs: dict[str, dict[str, str]]) -> WorkerQueues:
    return WorkerQueues(
        local_queues=lqs,
        cluster_queues={
            name: cluster_queue(quotas, covered=tuple(quotas)) for name, quotas in cqs.items()
        },
    )


AUTOMATED = {"spec": {"clusters": ["w1"], "quotaManagement": "Automated"}}


def test_only_the_worker_queues_fed_by_this_queues_local_queues_are_summed() -> None:
    w1 = worker(
        {("team-a", "lq"): "big", ("team-b", "other"): "elsewhere"},
        {"big": {"cpu": "1200m", "memory": "2G"}, "elsewhere": {"cpu": "100"}},
    )
    w2 = worker({("team-a", "lq"): "small"}, {"small": {"cpu": "2", "nvidia.com/gpu": "3"}})
    totals = aggregate([("team-a", "lq")], [w1, w2])
    plan = plan_quotas(cluster_queue({"cpu": "0", "memory": "0", "nvidia.com/gpu": "0"}), totals)
    assert plan.condition == WantedCondition(
        ConditionStatus.TRUE,
        REASON_AUTOMATED,
        "ClusterQueue quota is automatically managed based on MultiKueue workers.",
    )
    assert plan.resource_groups is not None
    resources = plan.resource_groups[0]["flavors"][0]["resources"]
    assert resources == [
        {"name": "cpu", "nominalQuota": "3200m"},
        {"name": "memory", "nominalQuota": "2G"},
        {"name": "nvidia.com/gpu", "nominalQuota": "3"},
    ]


def test_quotas_already_equal_in_another_spelling_are_not_rewritten() -> None:
    totals = aggregate(
        [("ns", "lq")], [worker({("ns", "lq"): "q"}, {"q": {"cpu": "2", "memory": "1Gi"}})]
    )
    current = cluster_queue({"cpu": "2000m", "memory": "1073741824", "nvidia.com/gpu": "0"})
    plan = plan_quotas(current, totals)
    assert plan.resource_groups is None
    assert plan.condition is not None and plan.condition.status is ConditionStatus.TRUE


def test_a_worker_resource_the_manager_does_not_cover_is_refused_by_name() -> None:
    totals = aggregate(
        [("ns", "lq")], [worker({("ns", "lq"): "q"}, {"q": {"cpu": "2", "example.com/fpga": "1"}})]
    )
    plan = plan_quotas(cluster_queue({"cpu": "0"}, covered=("cpu",)), totals)
    assert plan.resource_groups is None
    assert plan.condition == WantedCondition(
        ConditionStatus.FALSE,
        REASON_UNSUPPORTED,
        "manager-side coveredResources is missing resources configured on workers: "
        "[example.com/fpga]",
    )


def test_preconditions_say_why_automation_does_not_run() -> None:
    cq = cluster_queue({"cpu": "0"})

    def reason(**overrides: Any) -> tuple[str, str] | None:
        args: dict[str, Any] = {
            "has_multikueue_check": True,
            "config": AUTOMATED,
            "is_config": True,
            "cluster_queue": cq,
        }
        plan = precondition(**(args | overrides))
        if plan is None:
            return None
        return None if plan.condition is None else (plan.condition.reason, plan.condition.message)

    assert reason() is None  # aggregate
    plain = precondition(has_multikueue_check=False, config=None, is_config=True, cluster_queue=cq)
    assert plain is not None and plain.condition is None  # not a manager queue: no condition
    assert reason(config=None) == (
        REASON_UNSUPPORTED,
        "The referenced MultiKueueConfig was not found.",
    )
    assert reason(config={"spec": {"clusters": ["w1"]}}) == (
        REASON_NOT_REQUESTED,
        "MultiKueue manager quota automation has not been requested.",
    )
    assert reason(cluster_queue=cluster_queue({"cpu": "0"}, flavors=2)) == (
        REASON_UNSUPPORTED,
        "Quota automation requires that the manager-side ClusterQueue has exactly one "
        "ResourceFlavor",
    )
    not_requested = reason(is_config=False)
    assert not_requested is not None and not_requested[0] == REASON_NOT_REQUESTED


def test_the_condition_keeps_its_transition_time_while_its_status_holds() -> None:
    cq = cluster_queue({"cpu": "0"})
    automated = WantedCondition(ConditionStatus.TRUE, REASON_AUTOMATED, "m")
    first = conditions_with(cq, automated, NOW)
    assert first is not None and first[0]["lastTransitionTime"] == "2026-12-06T12:00:00Z"
    cq["status"] = {"conditions": [{"type": "Active", "status": "True"}, *first]}
    assert conditions_with(cq, automated, NOW.replace(hour=13)) is None  # unchanged
    refused = WantedCondition(ConditionStatus.FALSE, REASON_UNSUPPORTED, "n")
    later = conditions_with(cq, refused, NOW.replace(hour=13))
    assert later is not None
    assert [c["type"] for c in later] == ["Active", CONDITION]  # the engine's kept
    assert later[1]["lastTransitionTime"] == "2026-12-06T13:00:00Z"
    removed = conditions_with({"status": {"conditions": later}}, None, NOW)
    assert removed == [{"type": "Active", "status": "True"}]


def test_the_queue_status_writer_keeps_the_automation_condition() -> None:
    current = {
        "conditions": [
            {"type": "Active", "status": "True", "lastTransitionTime": "t0"},
            {"type": CONDITION, "status": "True", "reason": REASON_AUTOMATED},
        ]
    }
    merged = merge_conditions(current, [{"type": "Active", "status": "False"}], 4)
    assert {c["type"] for c in merged} == {"Active", CONDITION}


def test_the_gate_is_off_by_default_and_honoured_when_set() -> None:
    warnings: list[str] = []
    assert not parse_feature_gates(None, warnings).multikueue_quota_automation
    gates = parse_feature_gates({"MultiKueueManagerQuotaAutomation": True}, warnings)
    assert gates.multikueue_quota_automation and warnings == []

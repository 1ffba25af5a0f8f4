"""An AdmissionCheck is active only once its controller says so (upstream's check cache).

A check nobody has marked `Active` yet makes every ClusterQueue that uses it inactive with
reason AdmissionCheckInactive; the queue turns Ready when the check's controller writes
`Active=True`, and inactive again if it flips to False.
"""

from __future__ import annotations

from typing import Any

import pytest

from core.adapters.kueue_manifests import admission_check_from_manifest, from_manifest
from core.engine.clock import ManualClock
from core.engine.engine import Engine
from core.engine.model import ClusterQueue, ResourceFlavor
from tests import builders


def _check(conditions: list[dict[str, Any]] | None) -> dict[str, Any]:
    check = builders.AdmissionCheck("prov").controller_name("example.com/provisioner")
    if conditions is not None:
        check.conditions(*conditions)
    return check.obj()


def _active(status: str) -> dict[str, Any]:
    return {"type": "Active", "status": status, "reason": "Active", "message": "m"}


_CQ: dict[str, Any] = (
    builders.ClusterQueue("cq")
    .namespace_selector()
    .admission_checks("prov")
    .resource_group(builders.FlavorQuotas("default", {"cpu": 4}))
    .obj()
)


@pytest.mark.parametrize(
    ("conditions", "active"),
    [
        pytest.param(None, False, id="no-status-yet"),
        pytest.param([], False, id="no-conditions"),
        pytest.param([{"type": "Other", "status": "True"}], False, id="only-other-conditions"),
        pytest.param([_active("False")], False, id="active-false"),
        pytest.param([_active("Unknown")], False, id="active-unknown"),
        pytest.param([_active("True")], True, id="active-true"),
    ],
)
def test_check_is_active_only_with_active_true(
    conditions: list[dict[str, Any]] | None, active: bool
) -> None:
    assert admission_check_from_manifest(_check(conditions)).active is active


def _cq_active(engine: Engine) -> tuple[bool, str, str]:
    status = engine.cluster_queue_status("cq")
    assert status is not None
    (condition,) = status.conditions
    return condition.status, condition.reason, condition.message


def test_queue_follows_its_check_from_unmarked_to_active_and_back() -> None:
    engine = Engine(clock=ManualClock(0.0))
    engine.upsert_resource_flavor(ResourceFlavor(name="default"))
    cq = from_manifest(_CQ)
    assert isinstance(cq, ClusterQueue)
    engine.upsert_cluster_queue(cq)

    engine.upsert_admission_check(admission_check_from_manifest(_check(None)))
    assert _cq_active(engine) == (
        False,
        "AdmissionCheckInactive",
        "Can't admit new workloads: references inactive AdmissionCheck(s): prov.",
    )

    engine.upsert_admission_check(admission_check_from_manifest(_check([_active("True")])))
    assert _cq_active(engine)[:2] == (True, "Ready")

    engine.upsert_admission_check(admission_check_from_manifest(_check([_active("False")])))
    assert _cq_active(engine)[:2] == (False, "AdmissionCheckInactive")

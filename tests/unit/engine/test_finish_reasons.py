"""Finished reasons as upstream writes them: Succeeded, Failed, and FailedToStart.

Upstream's job reconciler finishes a Workload with FailedToStart when the admission can
never be applied to its job (a pod set count mismatch or a PodSetUpdate that conflicts
with the template); the quota is released like for any other finish.
"""

from __future__ import annotations

import pytest

from core.api.workload_conditions import WorkloadReason
from core.engine.clock import ManualClock
from core.engine.engine import Engine
from core.engine.model import (
    ClusterQueue,
    FlavorQuotas,
    LocalQueue,
    PodSet,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    Workload,
)


def _engine_with_admitted(name: str) -> Engine:
    engine = Engine(clock=ManualClock(100.0))
    engine.upsert_resource_flavor(ResourceFlavor(name="default"))
    engine.upsert_cluster_queue(
        ClusterQueue(
            name="cq",
            resource_groups=(
                ResourceGroup(
                    covered_resources=("cpu",),
                    flavors=(
                        FlavorQuotas(
                            name="default", resources=(ResourceQuota(name="cpu", nominal=2000),)
                        ),
                    ),
                ),
            ),
        )
    )
    engine.upsert_local_queue(LocalQueue(namespace="ns", name="lq", cluster_queue="cq"))
    engine.add_workload(
        Workload(
            namespace="ns",
            name=name,
            uid=name,
            queue_name="lq",
            pod_sets=(PodSet(count=2, requests={"cpu": 1000}),),
        )
    )
    assert [a.key for a in engine.schedule().admitted] == [f"ns/{name}"]
    return engine


@pytest.mark.parametrize(
    ("succeeded", "message", "reason", "want_reason", "want_message"),
    [
        pytest.param(True, "", None, "Succeeded", "Job finished successfully", id="succeeded"),
        pytest.param(
            False, "BackoffLimitExceeded", None, "Failed", "BackoffLimitExceeded", id="failed"
        ),
        pytest.param(
            False,
            'pod set "main": nodeSelector key "zone" conflicts',
            WorkloadReason.FAILED_TO_START,
            "FailedToStart",
            'pod set "main": nodeSelector key "zone" conflicts',
            id="failed-to-start",
        ),
    ],
)
def test_finish_writes_the_reason_and_releases_quota(
    succeeded: bool,
    message: str,
    reason: WorkloadReason | None,
    want_reason: str,
    want_message: str,
) -> None:
    engine = _engine_with_admitted("w")
    cq = engine.cluster_queue_status("cq")
    assert cq is not None and cq.admitted_workloads == 1

    changes = engine.finish("ns/w", succeeded, message, reason)

    assert "ns/w" in changes
    status = engine.workload_status("ns/w")
    assert status is not None
    finished = status.condition("Finished")
    assert finished is not None
    assert (finished.status, finished.reason, finished.message) == (
        True,
        want_reason,
        want_message,
    )
    cq = engine.cluster_queue_status("cq")
    assert cq is not None and (cq.reserving_workloads, cq.admitted_workloads) == (0, 0)


def test_a_finished_workload_keeps_its_first_reason() -> None:
    engine = _engine_with_admitted("w")
    engine.finish("ns/w", False, "cannot start", WorkloadReason.FAILED_TO_START)
    engine.finish("ns/w", True, "later success")
    status = engine.workload_status("ns/w")
    assert status is not None
    finished = status.condition("Finished")
    assert finished is not None and finished.reason == "FailedToStart"

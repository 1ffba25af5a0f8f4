"""Stopping a MultiKueue Job on the manager: the worker's running counts do not hold it up.

The manager's Job runs no pod; its `active`/`ready` are copies of the worker's. When the
manager evicts it, the apiserver refuses to restore its template while `active` is above
zero, and no Job controller will ever lower it, so the stop's status write resets them.
"""

from __future__ import annotations

from typing import Any

from integrations.batch_job.admission import JobSubresource, plan_stop, start_job
from integrations.framework.json_patch import apply_patch
from integrations.framework.labels import MULTIKUEUE_MANAGED_BY


def _running(job: dict[str, Any], *, managed_by: str | None) -> dict[str, Any]:
    if managed_by is not None:
        job["spec"]["managedBy"] = managed_by
    job["status"] = {"startTime": "2026-01-01T00:00:00Z", "active": 2, "ready": 1}
    return job


def test_a_multikueue_job_is_stopped_with_its_copied_counts_reset(
    stored_job: dict[str, Any], flavors: Any, admit: Any
) -> None:
    wl = admit(stored_job, {"cpu": "gpu-a100"})
    running = _running(start_job(stored_job, wl, flavors), managed_by=MULTIKUEUE_MANAGED_BY)
    writes = plan_stop(running, wl)
    clear = next(w for w in writes if w.subresource is JobSubresource.STATUS)
    status = apply_patch(running, clear.patch)["status"]
    assert "startTime" not in status
    assert (status["active"], status["ready"]) == (0, 0)
    # Planned again once written, nothing is left but the template.
    stopped = running
    for write in writes:
        stopped = apply_patch(stopped, write.patch)
    assert plan_stop(stopped, wl) == []


def test_a_job_run_here_keeps_its_counts_for_the_job_controller(
    stored_job: dict[str, Any], flavors: Any, admit: Any
) -> None:
    wl = admit(stored_job, {"cpu": "gpu-a100"})
    running = _running(start_job(stored_job, wl, flavors), managed_by=None)
    clear = next(w for w in plan_stop(running, wl) if w.subresource is JobSubresource.STATUS)
    assert clear.patch == [{"op": "remove", "path": "/status/startTime"}]

"""A job's WorkloadPriorityClass label moving its Workload's class, and when it may not."""

from __future__ import annotations

from core.api.codec import decode
from core.api.workload import Workload as WorkloadApi
from core.manager.job_controller import priority_class_change
from tests.builders import Job, Workload

VALUES = {"high": 300, "low": 100}


def _workload(priority_class: str) -> WorkloadApi:
    return decode(WorkloadApi, Workload("w", "ns").priority_class(priority_class).obj())


def test_a_relabelled_job_moves_its_workload_to_the_named_class() -> None:
    job = Job("j", "ns").priority_class("low").obj()
    assert priority_class_change(job, _workload("high"), VALUES) == ("low", 100)
    assert priority_class_change(job, _workload("low"), VALUES) is None
    unknown = Job("j", "ns").priority_class("medium").obj()
    assert priority_class_change(unknown, _workload("high"), VALUES) is None


def test_a_job_naming_a_prebuilt_workload_never_moves_it() -> None:
    # A MultiKueue worker's copy keeps the label it was created with; the manager patches
    # the copy's priority itself (upstream's reconciler leaves prebuilt Workloads alone).
    copied = Job("j", "ns").priority_class("high").prebuilt_workload("w").obj()
    assert priority_class_change(copied, _workload("low"), VALUES) is None

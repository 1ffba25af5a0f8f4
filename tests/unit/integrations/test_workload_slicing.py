"""Elastic Jobs' Workload slices: which slice stands for the Job and what is written.

Upstream's ElasticJobsViaWorkloadSlices rules as `framework.workload_slicing` plans them:
resize in place when the counts go down (or nothing is reserved yet), a new slice naming
the old one when they go up on a reserved slice, and one slice left in the end.
"""

from __future__ import annotations

import copy
from typing import Any

import msgspec
import pytest

from core.api.workload import Workload
from core.api.workload_conditions import WorkloadReason
from core.api.workload_slices import (
    ELASTIC_JOB_ANNOTATION,
    REPLACEMENT_FOR_ANNOTATION,
    SLICE_NAME_ANNOTATION,
)
from integrations.batch_job.kind import BATCH_JOB
from integrations.framework import job_webhook
from integrations.framework.admission_review import Operation
from integrations.framework.priority import PriorityClasses
from integrations.framework.webhook_context import WebhookContext
from integrations.framework.workload_builder import build_workload
from integrations.framework.workload_slicing import as_slice, plan_slices, slices_enabled
from integrations.jobset.kind import JOBSET


@pytest.fixture
def elastic_job(stored_job: dict[str, Any]) -> dict[str, Any]:
    stored_job["metadata"].setdefault("annotations", {})[ELASTIC_JOB_ANNOTATION] = "true"
    stored_job["metadata"]["generation"] = 1
    stored_job["spec"].update(parallelism=2, completions=10)
    return stored_job


def _slice(job: dict[str, Any], replaces: Workload | None = None) -> Workload:
    return as_slice(BATCH_JOB, job, build_workload(BATCH_JOB, job, PriorityClasses()), replaces)


def _scaled(job: dict[str, Any], parallelism: int) -> dict[str, Any]:
    out = copy.deepcopy(job)
    out["spec"]["parallelism"] = parallelism
    out["metadata"]["generation"] += 1
    return out


def test_only_an_opted_in_job_of_a_resizing_kind_under_the_gate_is_elastic(
    elastic_job: dict[str, Any], stored_job: dict[str, Any]
) -> None:
    assert slices_enabled(BATCH_JOB, elastic_job, gate=True)
    assert not slices_enabled(BATCH_JOB, elastic_job, gate=False)
    plain = copy.deepcopy(elastic_job)
    del plain["metadata"]["annotations"][ELASTIC_JOB_ANNOTATION]
    assert not slices_enabled(BATCH_JOB, plain, gate=True)
    assert not slices_enabled(JOBSET, elastic_job, gate=True)


def test_a_job_without_slices_gets_its_first_one_named_after_itself(
    elastic_job: dict[str, Any],
) -> None:
    assert plan_slices(BATCH_JOB, elastic_job, []).create_first
    first = _slice(elastic_job)
    annotations = first.metadata.annotations
    assert annotations[ELASTIC_JOB_ANNOTATION] == "true"
    assert annotations[SLICE_NAME_ANNOTATION] == first.metadata.name
    assert REPLACEMENT_FOR_ANNOTATION not in annotations
    assert first.metadata.name.startswith("job-")


def test_a_slice_with_the_jobs_counts_is_driven(elastic_job: dict[str, Any], admit: Any) -> None:
    reserved = admit(elastic_job, {"cpu": "plain"})
    plan = plan_slices(BATCH_JOB, elastic_job, [reserved])
    assert plan.drive is reserved and plan.resize is None and plan.create_replacing is None


def test_a_scale_down_resizes_the_reserved_slice_in_place(
    elastic_job: dict[str, Any], admit: Any
) -> None:
    reserved = admit(elastic_job, {"cpu": "plain"})
    plan = plan_slices(BATCH_JOB, _scaled(elastic_job, 1), [reserved])
    assert plan.drive is reserved
    assert plan.resize == {"main": 1}


def test_a_scale_up_of_a_slice_without_quota_resizes_it_in_place(
    elastic_job: dict[str, Any],
) -> None:
    pending = _slice(elastic_job)
    plan = plan_slices(BATCH_JOB, _scaled(elastic_job, 3), [pending])
    assert plan.resize == {"main": 3}


def test_a_scale_up_of_a_reserved_slice_creates_a_slice_replacing_it(
    elastic_job: dict[str, Any], admit: Any
) -> None:
    reserved = admit(elastic_job, {"cpu": "plain"})
    first = _slice(elastic_job)
    reserved = msgspec.structs.replace(reserved, metadata=first.metadata)
    grown = _scaled(elastic_job, 3)
    plan = plan_slices(BATCH_JOB, grown, [reserved])
    assert plan.create_replacing is reserved
    assert plan.drive is reserved  # the running job keeps its slice meanwhile
    new = _slice(grown, replaces=reserved)
    assert new.metadata.name != reserved.metadata.name
    namespace = reserved.metadata.namespace
    assert new.metadata.annotations[REPLACEMENT_FOR_ANNOTATION] == (
        f"{namespace}/{reserved.metadata.name}"
    )
    assert new.metadata.annotations[SLICE_NAME_ANNOTATION] == reserved.metadata.name


def test_a_pending_replacement_is_driven_and_its_predecessor_kept(
    elastic_job: dict[str, Any], admit: Any
) -> None:
    old = msgspec.structs.replace(
        admit(elastic_job, {"cpu": "plain"}), metadata=_slice(elastic_job).metadata
    )
    grown = _scaled(elastic_job, 3)
    new = _slice(grown, replaces=old)
    plan = plan_slices(BATCH_JOB, grown, [old, new])
    assert plan.drive is new
    assert plan.finish == []


def test_a_replaced_slice_left_over_is_finished_as_replaced_and_strays_as_out_of_sync(
    elastic_job: dict[str, Any], admit: Any
) -> None:
    old = msgspec.structs.replace(
        admit(elastic_job, {"cpu": "plain"}), metadata=_slice(elastic_job).metadata
    )
    grown = _scaled(elastic_job, 3)
    new = admit(grown, {"cpu": "plain"})
    new = msgspec.structs.replace(new, metadata=_slice(grown, replaces=old).metadata)
    stray = _slice(_scaled(grown, 4))
    plan = plan_slices(BATCH_JOB, grown, [old, new, stray])
    assert plan.drive is new
    reasons = {w.metadata.name: reason for w, reason, _ in plan.finish}
    assert reasons == {
        old.metadata.name: WorkloadReason.WORKLOAD_SLICE_REPLACED,
        stray.metadata.name: WorkloadReason.OUT_OF_SYNC,
    }


def test_the_annotation_may_not_be_added_to_a_job_nor_removed(
    elastic_job: dict[str, Any], stored_job: dict[str, Any]
) -> None:
    plain = copy.deepcopy(elastic_job)
    del plain["metadata"]["annotations"][ELASTIC_JOB_ANNOTATION]
    ctx = WebhookContext()
    errors = job_webhook.validate(BATCH_JOB, Operation.UPDATE, elastic_job, plain, ctx)
    assert [e.path for e in errors] == [f"metadata.annotations[{ELASTIC_JOB_ANNOTATION}]"]
    assert job_webhook.validate(BATCH_JOB, Operation.UPDATE, plain, elastic_job, ctx)
    off = WebhookContext(elastic_jobs=False)
    assert not job_webhook.validate(BATCH_JOB, Operation.UPDATE, elastic_job, plain, off)


def test_an_elastic_job_may_change_parallelism_while_running(
    elastic_job: dict[str, Any],
) -> None:
    running = copy.deepcopy(elastic_job)
    running["spec"]["suspend"] = False
    errors = job_webhook.validate(
        BATCH_JOB, Operation.UPDATE, _scaled(running, 5), running, WebhookContext()
    )
    assert errors == []


def test_partial_admission_and_elastic_are_refused_together(
    elastic_job: dict[str, Any],
) -> None:
    elastic_job["metadata"]["annotations"]["kueue.x-k8s.io/job-min-parallelism"] = "1"
    errors = job_webhook.validate(BATCH_JOB, Operation.CREATE, elastic_job, None, WebhookContext())
    assert any("cannot be used together" in e.message for e in errors)


def test_the_annotation_is_refused_on_a_kind_upstream_never_resizes() -> None:
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": "js",
            "namespace": "ns",
            "annotations": {ELASTIC_JOB_ANNOTATION: "true"},
        },
        "spec": {"replicatedJobs": []},
    }
    errors = job_webhook.validate(JOBSET, Operation.CREATE, jobset, None, WebhookContext())
    assert any("elastic job is not supported" in e.message for e in errors)

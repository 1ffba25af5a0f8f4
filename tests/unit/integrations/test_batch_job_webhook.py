"""The Job webhooks: what defaulting changes on create, and what validation rejects."""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from core.api.validation.field_errors import ErrorType
from integrations.batch_job.kind import BATCH_JOB
from integrations.batch_job.webhook import default_job, validate_update
from integrations.framework import job_webhook
from integrations.framework.admission_review import (
    BadAdmissionReview,
    Operation,
    aggregate_message,
    parse_request,
)
from integrations.framework.json_patch import apply_patch
from integrations.framework.webhook_context import WebhookContext as JobWebhookContext


def validate_create(job: Any, ctx: JobWebhookContext | None = None) -> list[Any]:
    return BATCH_JOB.validate_create(job, ctx or JobWebhookContext())


def mutation_patch(operation: Operation, job: Any, ctx: JobWebhookContext) -> list[Any]:
    return job_webhook.mutation_patch(BATCH_JOB, operation, job, ctx)


def validate(operation: Operation, job: Any, old: Any, ctx: JobWebhookContext) -> list[Any]:
    return job_webhook.validate(BATCH_JOB, operation, job, old, ctx)


def mutate(review: Any, ctx: JobWebhookContext) -> dict[str, Any]:
    return job_webhook.mutate_review(BATCH_JOB, review, ctx)


def validate_review(review: Any, ctx: JobWebhookContext) -> dict[str, Any]:
    return job_webhook.validate_review(BATCH_JOB, review, ctx)


QUEUE = "kueue.x-k8s.io/queue-name"
MIN_PARALLELISM = "kueue.x-k8s.io/job-min-parallelism"
SYNC_COMPLETIONS = "kueue.x-k8s.io/job-completions-equal-parallelism"
MULTIKUEUE = "kueue.x-k8s.io/multikueue"


def new_job(
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A Job as a user submits it (after apiserver defaulting, before the webhooks)."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "pi",
            "namespace": "team-a",
            **({"labels": labels} if labels is not None else {}),
            **({"annotations": annotations} if annotations is not None else {}),
        },
        "spec": {
            "parallelism": 1,
            "completions": 1,
            "suspend": False,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "pi", "image": "perl:5.34", "resources": {}}],
                }
            },
            **spec,
        },
    }


def mk_queues(*names: str) -> Callable[[str], bool]:
    return lambda queue: queue in names


# --- defaulting -------------------------------------------------------------------------


@dataclass
class DefaultingCase:
    name: str
    job: dict[str, Any]
    ctx: JobWebhookContext
    queue: str | None
    suspend: bool
    managed_by: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


DEFAULTING_CASES = [
    DefaultingCase(
        "a job with a queue name is suspended",
        new_job(labels={QUEUE: "user-queue"}),
        JobWebhookContext(),
        queue="user-queue",
        suspend=True,
    ),
    DefaultingCase(
        "a job without queue name gets the default LocalQueue and is suspended",
        new_job(),
        JobWebhookContext(default_local_queue_exists=True),
        queue="default",
        suspend=True,
    ),
    DefaultingCase(
        "a job without queue name and no default LocalQueue is left alone",
        new_job(),
        JobWebhookContext(),
        queue=None,
        suspend=False,
    ),
    DefaultingCase(
        "an explicit queue name is not replaced by the default",
        new_job(labels={QUEUE: "gpu"}),
        JobWebhookContext(default_local_queue_exists=True),
        queue="gpu",
        suspend=True,
    ),
    DefaultingCase(
        "a job owned by a kind Kueue queues as a whole gets no default queue",
        new_job(),
        JobWebhookContext(default_local_queue_exists=True, owner_is_managed_kind=True),
        queue=None,
        suspend=False,
    ),
    DefaultingCase(
        "manageJobsWithoutQueueName suspends a job without queue name",
        new_job(),
        JobWebhookContext(manage_jobs_without_queue_name=True),
        queue=None,
        suspend=True,
    ),
    DefaultingCase(
        "manageJobsWithoutQueueName spares namespaces the selector does not match",
        new_job(),
        JobWebhookContext(manage_jobs_without_queue_name=True, namespace_selected=False),
        queue=None,
        suspend=False,
    ),
    DefaultingCase(
        "a child of a Kueue-managed job is not suspended (its ancestor's Workload covers it)",
        new_job(labels={QUEUE: "user-queue"}),
        JobWebhookContext(ancestor_managed_by_kueue=True),
        queue="user-queue",
        suspend=False,
    ),
    DefaultingCase(
        "a job whose queue leads to MultiKueue is managed by MultiKueue",
        new_job(labels={QUEUE: "fleet"}),
        JobWebhookContext(leads_to_multikueue=mk_queues("fleet")),
        queue="fleet",
        suspend=True,
        managed_by=MULTIKUEUE,
    ),
    DefaultingCase(
        "the defaulted queue counts when deciding on MultiKueue",
        new_job(),
        JobWebhookContext(
            default_local_queue_exists=True, leads_to_multikueue=mk_queues("default")
        ),
        queue="default",
        suspend=True,
        managed_by=MULTIKUEUE,
    ),
    DefaultingCase(
        "managedBy set to the built-in Job controller is replaced by MultiKueue",
        new_job(labels={QUEUE: "fleet"}, managedBy="kubernetes.io/job-controller"),
        JobWebhookContext(leads_to_multikueue=mk_queues("fleet")),
        queue="fleet",
        suspend=True,
        managed_by=MULTIKUEUE,
    ),
    DefaultingCase(
        "a managedBy the user chose is kept",
        new_job(labels={QUEUE: "fleet"}, managedBy="example.com/my-controller"),
        JobWebhookContext(leads_to_multikueue=mk_queues("fleet")),
        queue="fleet",
        suspend=True,
        managed_by="example.com/my-controller",
    ),
    DefaultingCase(
        "a queue without MultiKueue leaves managedBy unset",
        new_job(labels={QUEUE: "local"}),
        JobWebhookContext(leads_to_multikueue=mk_queues("fleet")),
        queue="local",
        suspend=True,
        managed_by=None,
    ),
    DefaultingCase(
        "with MultiKueue disabled managedBy is never set",
        new_job(labels={QUEUE: "fleet"}),
        JobWebhookContext(leads_to_multikueue=mk_queues("fleet"), multikueue_enabled=False),
        queue="fleet",
        suspend=True,
        managed_by=None,
    ),
]


@pytest.mark.parametrize("case", DEFAULTING_CASES, ids=lambda c: c.name)
def test_defaulting(case: DefaultingCase) -> None:
    before = copy.deepcopy(case.job)
    patch = mutation_patch(Operation.CREATE, case.job, case.ctx)
    result = apply_patch(case.job, patch)
    assert case.job == before, "the input Job must not be modified"
    assert result == default_job(case.job, case.ctx)
    assert result["metadata"].get("labels", {}).get(QUEUE) == case.queue
    assert result["spec"]["suspend"] is case.suspend
    assert result["spec"].get("managedBy") == case.managed_by


def test_defaulting_patch_touches_only_what_changes() -> None:
    job = new_job(labels={"app": "pi"})
    ctx = JobWebhookContext(
        default_local_queue_exists=True, leads_to_multikueue=mk_queues("default")
    )
    assert mutation_patch(Operation.CREATE, job, ctx) == [
        {"op": "add", "path": "/metadata/labels/kueue.x-k8s.io~1queue-name", "value": "default"},
        {"op": "replace", "path": "/spec/suspend", "value": True},
        {"op": "add", "path": "/spec/managedBy", "value": MULTIKUEUE},
    ]


def test_defaulting_an_already_suspended_job_changes_nothing() -> None:
    job = new_job(labels={QUEUE: "user-queue"}, suspend=True)
    assert mutation_patch(Operation.CREATE, job, JobWebhookContext()) == []


def test_defaulting_runs_on_create_only() -> None:
    job = new_job(labels={QUEUE: "user-queue"})
    assert mutation_patch(Operation.UPDATE, job, JobWebhookContext()) == []


# --- validation -------------------------------------------------------------------------


@dataclass
class CreateCase:
    name: str
    job: dict[str, Any]
    errors: list[str]


CREATE_CASES = [
    CreateCase("a plain queued job is valid", new_job(labels={QUEUE: "user-queue"}), []),
    CreateCase(
        "queue name must be a DNS subdomain",
        new_job(labels={QUEUE: "User_Queue"}),
        [
            'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "User_Queue": must be a'
            " lowercase RFC 1123 subdomain"
        ],
    ),
    CreateCase(
        "queue name must not be longer than 253 characters",
        new_job(labels={QUEUE: "q" * 254}),
        ["must be no more than 253 characters"],
    ),
    CreateCase(
        "prebuilt workload name must be a DNS subdomain",
        new_job(labels={"kueue.x-k8s.io/prebuilt-workload-name": "-bad"}),
        ['metadata.labels[kueue.x-k8s.io/prebuilt-workload-name]: Invalid value: "-bad"'],
    ),
    CreateCase(
        "max-exec-time must be a number",
        new_job(labels={"kueue.x-k8s.io/max-exec-time-seconds": "10m"}),
        ['Invalid value: "10m": must be a whole number of seconds'],
    ),
    CreateCase(
        "max-exec-time must be positive",
        new_job(labels={"kueue.x-k8s.io/max-exec-time-seconds": "0"}),
        ["Invalid value: 0: must be greater than 0"],
    ),
    CreateCase(
        "min-parallelism below parallelism is fine",
        new_job(annotations={MIN_PARALLELISM: "2"}, parallelism=5, completions=10),
        [],
    ),
    CreateCase(
        "min-parallelism must be a number",
        new_job(annotations={MIN_PARALLELISM: "half"}, parallelism=5, completions=10),
        [
            'metadata.annotations[kueue.x-k8s.io/job-min-parallelism]: Invalid value: "half":'
            " must be a whole number of pods"
        ],
    ),
    CreateCase(
        "min-parallelism must be positive",
        new_job(annotations={MIN_PARALLELISM: "0"}, parallelism=5, completions=10),
        ["Invalid value: 0: must be between 1 and 4: the Job runs 5 pods at once"],
    ),
    CreateCase(
        "min-parallelism must be smaller than the pods the job runs at once",
        new_job(annotations={MIN_PARALLELISM: "5"}, parallelism=5, completions=10),
        ["Invalid value: 5: must be between 1 and 4"],
    ),
    CreateCase(
        "completions below parallelism lower the ceiling for min-parallelism",
        new_job(annotations={MIN_PARALLELISM: "3"}, parallelism=5, completions=3),
        ["Invalid value: 3: must be between 1 and 2: the Job runs 3 pods at once"],
    ),
    CreateCase(
        "partial admission of a single-pod job is explained",
        new_job(annotations={MIN_PARALLELISM: "1"}),
        ["partial admission needs a Job that runs at least 2 pods at once"],
    ),
    CreateCase(
        "completions-equal-parallelism needs an Indexed job with completions = parallelism",
        new_job(annotations={SYNC_COMPLETIONS: "true"}, parallelism=4, completions=8),
        [
            "may only be enabled for Indexed Jobs",
            "spec.completions: Invalid value: 8: must equal parallelism",
        ],
    ),
    CreateCase(
        "completions-equal-parallelism on an Indexed job with equal counts is fine",
        new_job(
            annotations={SYNC_COMPLETIONS: "true"},
            parallelism=4,
            completions=4,
            completionMode="Indexed",
        ),
        [],
    ),
    CreateCase(
        "completions-equal-parallelism must be a boolean",
        new_job(annotations={SYNC_COMPLETIONS: "yes"}),
        ['Invalid value: "yes": must be "true" or "false"'],
    ),
]


@pytest.mark.parametrize("case", CREATE_CASES, ids=lambda c: c.name)
def test_validate_create(case: CreateCase) -> None:
    errors = validate_create(case.job)
    assert len(errors) == len(case.errors), [str(e) for e in errors]
    for error, expected in zip(errors, case.errors, strict=True):
        assert expected in str(error)


def running(job: dict[str, Any]) -> dict[str, Any]:
    started = copy.deepcopy(job)
    started["spec"]["suspend"] = False
    return started


def suspended(job: dict[str, Any]) -> dict[str, Any]:
    stopped = copy.deepcopy(job)
    stopped["spec"]["suspend"] = True
    return stopped


BASE = new_job(labels={QUEUE: "user-queue"}, parallelism=4, completions=8)


@dataclass
class UpdateCase:
    name: str
    old: dict[str, Any]
    new: dict[str, Any]
    errors: list[str]
    ctx: JobWebhookContext = field(default_factory=JobWebhookContext)


UPDATE_CASES = [
    UpdateCase(
        "changing the queue of a suspended job is allowed",
        suspended(BASE),
        suspended(new_job(labels={QUEUE: "other"}, parallelism=4, completions=8)),
        [],
    ),
    UpdateCase(
        "changing the queue of a running job is rejected",
        running(BASE),
        running(new_job(labels={QUEUE: "other"}, parallelism=4, completions=8)),
        [
            'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "other": cannot be'
            " changed while the job is running"
        ],
    ),
    UpdateCase(
        "unsuspending with a new queue is rejected too (the new Job runs)",
        suspended(BASE),
        running(new_job(labels={QUEUE: "other"}, parallelism=4, completions=8)),
        ["cannot be changed while the job is running"],
    ),
    UpdateCase(
        "removing the queue in a namespace with a default LocalQueue is rejected",
        suspended(BASE),
        suspended(new_job(parallelism=4, completions=8)),
        ["must not be removed in a namespace with a default LocalQueue"],
        JobWebhookContext(default_local_queue_exists=True),
    ),
    UpdateCase(
        "an invalid new queue name is rejected on update as on create",
        suspended(BASE),
        suspended(new_job(labels={QUEUE: "Bad"}, parallelism=4, completions=8)),
        ["must be a lowercase RFC 1123 subdomain"],
    ),
    UpdateCase(
        "a priority class cannot be added to a running job",
        running(BASE),
        running(
            new_job(
                labels={QUEUE: "user-queue", "kueue.x-k8s.io/priority-class": "high"},
                parallelism=4,
                completions=8,
            )
        ),
        ["a WorkloadPriorityClass cannot be added to a running job"],
    ),
    UpdateCase(
        "a priority class may change while the job runs",
        running(
            new_job(
                labels={QUEUE: "user-queue", "kueue.x-k8s.io/priority-class": "low"},
                parallelism=4,
                completions=8,
            )
        ),
        running(
            new_job(
                labels={QUEUE: "user-queue", "kueue.x-k8s.io/priority-class": "high"},
                parallelism=4,
                completions=8,
            )
        ),
        [],
    ),
    UpdateCase(
        "a priority class cannot be removed",
        suspended(
            new_job(
                labels={QUEUE: "user-queue", "kueue.x-k8s.io/priority-class": "low"},
                parallelism=4,
                completions=8,
            )
        ),
        suspended(BASE),
        ["a WorkloadPriorityClass cannot be removed from a job"],
    ),
    UpdateCase(
        "max-exec-time cannot change while running",
        running(
            new_job(
                labels={QUEUE: "user-queue", "kueue.x-k8s.io/max-exec-time-seconds": "60"},
                parallelism=4,
                completions=8,
            )
        ),
        running(
            new_job(
                labels={QUEUE: "user-queue", "kueue.x-k8s.io/max-exec-time-seconds": "120"},
                parallelism=4,
                completions=8,
            )
        ),
        ['max-exec-time-seconds]: Invalid value: "120": cannot be changed while'],
    ),
    UpdateCase(
        "the prebuilt workload cannot change while running",
        running(
            new_job(
                labels={QUEUE: "q", "kueue.x-k8s.io/prebuilt-workload-name": "wl-a"},
            )
        ),
        running(
            new_job(
                labels={QUEUE: "q", "kueue.x-k8s.io/prebuilt-workload-name": "wl-b"},
            )
        ),
        ['prebuilt-workload-name]: Invalid value: "wl-b": cannot be changed'],
    ),
    UpdateCase(
        "parallelism cannot change while a partially admitted job runs",
        running(new_job(annotations={MIN_PARALLELISM: "2"}, parallelism=4, completions=8)),
        running(new_job(annotations={MIN_PARALLELISM: "2"}, parallelism=3, completions=8)),
        [
            "spec.parallelism: Forbidden: cannot change while partial admission is enabled and"
            " the job is not suspended"
        ],
    ),
    UpdateCase(
        "parallelism may change while a partially admissible job is suspended",
        suspended(new_job(annotations={MIN_PARALLELISM: "2"}, parallelism=4, completions=8)),
        suspended(new_job(annotations={MIN_PARALLELISM: "2"}, parallelism=3, completions=8)),
        [],
    ),
    UpdateCase(
        "a changed min-parallelism is validated again",
        suspended(new_job(annotations={MIN_PARALLELISM: "2"}, parallelism=4, completions=8)),
        suspended(new_job(annotations={MIN_PARALLELISM: "9"}, parallelism=4, completions=8)),
        ["Invalid value: 9: must be between 1 and 3"],
    ),
    UpdateCase(
        "an unchanged min-parallelism is not re-checked (the job may have been scaled)",
        running(new_job(annotations={MIN_PARALLELISM: "3"}, parallelism=3, completions=8)),
        running(new_job(annotations={MIN_PARALLELISM: "3"}, parallelism=3, completions=8)),
        [],
    ),
]


@pytest.mark.parametrize("case", UPDATE_CASES, ids=lambda c: c.name)
def test_validate_update(case: UpdateCase) -> None:
    errors = validate_update(case.old, case.new, case.ctx)
    assert len(errors) == len(case.errors), [str(e) for e in errors]
    for error, expected in zip(errors, case.errors, strict=True):
        assert expected in str(error)


def test_validation_errors_name_field_and_kind() -> None:
    (error,) = validate_create(new_job(labels={QUEUE: "Bad"}))
    assert error.path == "metadata.labels[kueue.x-k8s.io/queue-name]"
    assert error.type is ErrorType.INVALID


def test_validate_dispatches_on_operation() -> None:
    bad = new_job(labels={QUEUE: "Bad"})
    assert validate(Operation.CREATE, bad, None, JobWebhookContext())
    assert validate(Operation.UPDATE, bad, bad, JobWebhookContext())
    assert validate(Operation.DELETE, bad, bad, JobWebhookContext()) == []


# --- AdmissionReview ------------------------------------------------------------------


def review(operation: str, obj: dict[str, Any], old: dict[str, Any] | None = None) -> dict:
    request: dict[str, Any] = {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "kind": {"group": "batch", "version": "v1", "kind": "Job"},
        "resource": {"group": "batch", "version": "v1", "resource": "jobs"},
        "namespace": "team-a",
        "operation": operation,
        "object": obj,
    }
    if old is not None:
        request["oldObject"] = old
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def test_mutating_review_carries_a_base64_json_patch() -> None:
    job = new_job(labels={QUEUE: "user-queue"})
    answer = mutate(review("CREATE", job), JobWebhookContext())
    response = answer["response"]
    assert answer["apiVersion"] == "admission.k8s.io/v1"
    assert answer["kind"] == "AdmissionReview"
    assert response["uid"] == "705ab4f5-6393-11e8-b7cc-42010a800002"
    assert response["allowed"] is True
    assert response["patchType"] == "JSONPatch"
    patch = json.loads(base64.b64decode(response["patch"]))
    assert apply_patch(job, patch)["spec"]["suspend"] is True


def test_mutating_review_without_changes_has_no_patch() -> None:
    answer = mutate(review("CREATE", new_job()), JobWebhookContext())
    assert answer["response"]["allowed"] is True
    assert "patch" not in answer["response"]
    assert "patchType" not in answer["response"]


def test_validating_review_denies_with_every_error() -> None:
    job = new_job(labels={QUEUE: "Bad"}, annotations={MIN_PARALLELISM: "x"}, parallelism=3)
    response = validate_review(review("CREATE", job), JobWebhookContext())["response"]
    assert response["allowed"] is False
    assert response["status"]["code"] == 403
    assert response["status"]["reason"] == "Forbidden"
    message = response["status"]["message"]
    assert message.startswith("[metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value")
    assert "metadata.annotations[kueue.x-k8s.io/job-min-parallelism]" in message


def test_validating_review_allows_a_valid_update() -> None:
    old = suspended(BASE)
    new = running(BASE)
    response = validate_review(review("UPDATE", new, old), JobWebhookContext())["response"]
    assert response == {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "allowed": True,
        "status": {"code": 200},
    }


def test_one_error_is_reported_without_brackets() -> None:
    (error,) = validate_create(new_job(labels={QUEUE: "Bad"}))
    assert aggregate_message([error]) == str(error)


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"request": {"operation": "CREATE"}},
        {"request": {"uid": "1", "operation": "PATCH"}},
    ],
)
def test_malformed_reviews_are_refused(body: dict[str, Any]) -> None:
    with pytest.raises(BadAdmissionReview):
        parse_request(body)

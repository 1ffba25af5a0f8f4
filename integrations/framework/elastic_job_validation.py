"""Webhook rules for the elastic-job annotation, every kind's (upstream's jobframework).

With the ElasticJobsViaWorkloadSlices gate on, `kueue.x-k8s.io/elastic-job: "true"`:
- is refused on create for a kind upstream never resizes in slices (a JobSet, a Pod…):
  it would promise a resize nobody performs. Kinds upstream resizes but fleetq does not
  yet (Ray's) keep their own rules (`integrations.ray.cluster_validation`);
- may not be added to or removed from an existing job (its Workloads are slices or not
  for the job's whole life).
With the gate off the annotation means nothing and is not checked, as upstream.
"""

from __future__ import annotations

from typing import Final

from core.api.validation.field_errors import FieldError, forbidden
from core.api.workload_slices import ELASTIC_JOB_ANNOTATION, elastic
from integrations.framework.job_capabilities import resizes_in_slices
from integrations.framework.job_kind import JobKind
from integrations.framework.job_metadata import Job
from integrations.framework.job_validation import ANNOTATIONS_PATH, IMMUTABLE, invalid_value
from integrations.framework.webhook_context import WebhookContext

ELASTIC_JOB_PATH: Final = ANNOTATIONS_PATH.key(ELASTIC_JOB_ANNOTATION)
UPSTREAM_ELASTIC_KINDS: Final = frozenset(
    {("batch", "Job"), ("ray.io", "RayCluster"), ("ray.io", "RayJob"), ("ray.io", "RayService")}
)
"""(API group, kind) upstream v0.19 accepts the annotation on."""


def validate_elastic_create(kind: JobKind, job: Job, ctx: WebhookContext) -> list[FieldError]:
    if not ctx.elastic_jobs or not elastic(job) or resizes_in_slices(kind):
        return []
    resource = kind.resource
    if (resource.group, resource.kind) in UPSTREAM_ELASTIC_KINDS:
        return []
    gvk = f"{resource.api_version}, Kind={resource.kind}"
    return [forbidden(ELASTIC_JOB_PATH, f'elastic job is not supported for "{gvk}"')]


def validate_elastic_update(old: Job, new: Job, ctx: WebhookContext) -> list[FieldError]:
    if not ctx.elastic_jobs or elastic(old) == elastic(new):
        return []
    return [invalid_value(ELASTIC_JOB_PATH, elastic(new), IMMUTABLE)]

"""The Deployment as a `JobKind` that is `WebhookOnly` (see the package docstring).

Only the webhook answers are real; the job controller never runs for a Deployment (it is
never queued itself: its Pods are), so the reading, Workload and running answers are
those of a job with nothing to queue, and MultiKueue never dispatches it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from core.api.resource_flavor import ResourceFlavor
from core.api.validation.field_errors import FieldError
from core.api.workload import PodSet, ReclaimablePod, Workload
from integrations.deployment import webhook
from integrations.framework.job_kind import (
    JobFinish,
    JobResource,
    JobWrite,
    StatusSync,
    StatusSyncDecision,
)
from integrations.framework.job_metadata import Job
from integrations.framework.webhook_context import WebhookContext


class DeploymentKind:
    """The Deployment (upstream's `deployment` framework)."""

    framework = webhook.FRAMEWORK_NAME
    resource = JobResource("apps", "v1", "deployments", "Deployment")
    own_controller_name = ""
    pod_name_labels: tuple[str, ...] = ()
    child_kinds: tuple[tuple[str, str], ...] = ()

    # -- optional capabilities (integrations.framework.job_capabilities) ----------------
    webhook_only = True
    implied_frameworks: tuple[str, ...] = ("pod",)
    webhooks_in_managed_namespaces_only = True

    def is_suspended(self, job: Job) -> bool:
        return False

    def managed_by(self, job: Job) -> str | None:
        return None

    def pod_sets(self, job: Job) -> list[PodSet]:
        return []

    def expected_running_pod_sets(
        self, workload: Workload, flavors: Mapping[str, ResourceFlavor]
    ) -> list[PodSet] | None:
        return None

    def start(
        self, job: Job, workload: Workload, flavors: Mapping[str, ResourceFlavor]
    ) -> dict[str, Any]:
        return dict(job)

    def plan_stop(self, job: Job, workload: Workload | None) -> list[JobWrite]:
        return []

    def finished(self, job: Job) -> JobFinish | None:
        return None

    def is_active(self, job: Job) -> bool:
        return False

    def pods_ready(self, job: Job) -> bool:
        return False

    def reclaimable_pods(self, job: Job) -> list[ReclaimablePod]:
        return []

    def default(self, job: Job, ctx: WebhookContext) -> dict[str, Any]:
        return webhook.default_deployment(job, ctx)

    def validate_create(self, job: Job, ctx: WebhookContext) -> list[FieldError]:
        return webhook.validate_create(job)

    def validate_update(self, old: Job, new: Job, ctx: WebhookContext) -> list[FieldError]:
        return webhook.validate_update(old, new)

    def remote_job(self, local: Job, *, workload_name: str, origin: str) -> dict[str, Any]:
        return dict(local)

    def remote_status_sync(self, local: Job, remote: Job) -> StatusSync:
        return StatusSync(StatusSyncDecision.NOT_MANAGED)


DEPLOYMENT: Final = DeploymentKind()

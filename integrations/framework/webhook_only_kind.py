"""The answers of a kind only its webhooks serve (`job_capabilities.WebhookOnly`).

A Deployment is never queued itself — its Pods are — so the job controller never runs
for it and MultiKueue never dispatches it; only `default` and the validations are real. A
kind of that sort subclasses `WebhookOnlyKind` and supplies its framework name, resource
and webhook rules; the rest are the answers of a job with nothing to queue. Kinds whose
Pods join prebuilt group Workloads (StatefulSet, LeaderWorkerSet) reuse those answers
too, with `webhook_only = False`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.api.resource_flavor import ResourceFlavor
from core.api.workload import PodSet, ReclaimablePod, Workload
from integrations.framework.job_kind import JobFinish, JobWrite, StatusSync, StatusSyncDecision
from integrations.framework.job_metadata import Job


class WebhookOnlyKind:
    """Base of a webhook-only kind; webhooks apply in managed namespaces only, and its
    defaulting answers updates too (a queue name changed on the object reaches the pod
    template, so its controller rolls the Pods onto the new queue)."""

    own_controller_name = ""
    pod_name_labels: tuple[str, ...] = ()
    child_kinds: tuple[tuple[str, str], ...] = ()
    webhook_only = True
    webhooks_in_managed_namespaces_only = True
    defaults_on_update = True

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

    def remote_job(self, local: Job, *, workload_name: str, origin: str) -> dict[str, Any]:
        return dict(local)

    def remote_status_sync(self, local: Job, remote: Job) -> StatusSync:
        return StatusSync(StatusSyncDecision.NOT_MANAGED)

"""The LeaderWorkerSet as a kind whose groups are prebuilt Workloads
(`framework.group_workloads.PrebuildsGroupWorkloads`; see the package docstring).

The job controller never runs for it: nothing of a LeaderWorkerSet is suspended, started
or stopped; its groups' Pods are, as pod groups. So the Job-like answers are those of a
job with nothing to run, the pod sets are one group's, and its Pods are the objects it
references (the manager watches them for the group controller). MultiKueue dispatches it
whole, to the one worker all its groups run on (`multikueue_adapter`; upstream v0.19.2's
adapter): `DispatchedWithoutManagedBy`, `NamesRemoteWorkloads`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from core.api.validation.field_errors import FieldError
from core.api.workload import PodSet, Workload
from integrations.framework.group_workloads import GroupWorkloadName
from integrations.framework.job_kind import JobKind, JobResource
from integrations.framework.job_metadata import Job
from integrations.framework.referenced_objects import ObjectLookup
from integrations.framework.webhook_context import WebhookContext
from integrations.framework.webhook_only_kind import WebhookOnlyKind
from integrations.leaderworkerset import groups, multikueue_adapter, webhook
from integrations.leaderworkerset import lws_fields as fields
from integrations.leaderworkerset.pod_sets import lws_pod_sets

PODS: Final = JobResource("", "v1", "pods", "Pod")


class LeaderWorkerSetKind(WebhookOnlyKind):
    """The LeaderWorkerSet (upstream's `leaderworkerset.x-k8s.io/leaderworkerset`)."""

    framework = webhook.FRAMEWORK_NAME
    resource = JobResource(fields.GROUP, fields.VERSION, fields.PLURAL, fields.KIND)
    pod_name_labels: tuple[str, ...] = (fields.SET_NAME_LABEL,)
    implied_frameworks: tuple[str, ...] = ("pod",)
    webhook_only = False
    webhooks_in_managed_namespaces_only = False
    dispatched_without_managed_by = True

    # -- PrebuildsGroupWorkloads ---------------------------------------------------------
    def pod_job_name(self, pod: Mapping[str, Any]) -> str | None:
        return groups.lws_of_pod(pod)

    def wanted_group_workloads(self, job: Job) -> list[GroupWorkloadName]:
        return groups.wanted_groups(job)

    def creates_group_workloads(self, job: Job) -> bool:
        return not groups.is_remote_copy(job)

    def group_workload(self, workload: Workload, job: Job, wanted: GroupWorkloadName) -> Workload:
        return groups.group_workload(workload, job, wanted)

    def marked_pod(self, job: Job, pod: Mapping[str, Any]) -> dict[str, Any] | None:
        return groups.marked_pod(job, pod)

    # -- ReadsReferencedObjects: its Pods ----------------------------------------------
    referenced_resources: tuple[JobResource, ...] = (PODS,)

    def bound(self, lookup: ObjectLookup) -> JobKind:
        return self  # the group controller reads the Pods from their cache itself

    # -- MultiKueue ----------------------------------------------------------------------
    def remote_job(self, local: Job, *, workload_name: str, origin: str) -> dict[str, Any]:
        return multikueue_adapter.remote_leaderworkerset(
            local, workload_name=workload_name, origin=origin
        )

    def remote_workload_names(self, remote: Job) -> list[str]:
        return multikueue_adapter.remote_workload_names(remote)

    # -- JobKind -------------------------------------------------------------------------
    def pod_sets(self, job: Job) -> list[PodSet]:
        return lws_pod_sets(job)

    def default(self, job: Job, ctx: WebhookContext) -> dict[str, Any]:
        return webhook.default_leaderworkerset(job, ctx)

    def validate_create(self, job: Job, ctx: WebhookContext) -> list[FieldError]:
        return webhook.validate_create(job, ctx)

    def validate_update(self, old: Job, new: Job, ctx: WebhookContext) -> list[FieldError]:
        return webhook.validate_update(old, new, ctx)


LEADERWORKERSET: Final = LeaderWorkerSetKind()

"""The plain Pod as a `JobKind`, with the optional capabilities a Pod needs.

A Pod cannot be suspended and is never reused, and a pod group is one job of many Pods,
so beyond `JobKind` it is `ComposedJobs` (groups: `pod_group`), `SkipsJobs` (only Pods
the webhook marked managed), `HoldsJobFinalizer` (its `kueue.x-k8s.io/managed`
finalizer), `StopsByDeletion`, `ChildOfEveryKind` (a Job's pods are the Job's),
`WebhooksInManagedNamespacesOnly` (its webhooks sit in the path of every pod creation, so
they are registered for the managed namespaces only), and for MultiKueue
`DispatchedWithoutManagedBy` and `StaysGatedWhenDispatched` (`multikueue_adapter`: the
Pod, or every Pod of a group, is copied to the worker and runs there; the manager's stays
gated and gets the worker's status). Each `JobKind` method takes a single Pod or a group
as `pod_group.compose` builds it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from core.api.resource_flavor import ResourceFlavor
from core.api.validation.field_errors import FieldError
from core.api.workload import PodSet, ReclaimablePod, Workload
from integrations.framework.job_kind import JobFinish, JobResource, JobWrite, StatusSync
from integrations.framework.job_metadata import Job
from integrations.framework.webhook_context import WebhookContext
from integrations.framework.workload_matching import admitted_pod_sets
from integrations.pod import admission, multikueue_adapter, pod_group, status, webhook
from integrations.pod import pod_fields as fields
from integrations.pod.group_matching import ComposedMatch, match_group
from integrations.pod.pod_sets import pod_pod_sets

FRAMEWORK_NAME: Final = "pod"


class PodKind:
    """The plain Pod (upstream's `pod` framework)."""

    framework = FRAMEWORK_NAME
    resource = JobResource("", fields.POD_VERSION, "pods", fields.POD_KIND)
    own_controller_name = ""
    pod_name_labels: tuple[str, ...] = ()
    child_kinds: tuple[tuple[str, str], ...] = ()

    # -- optional capabilities (integrations.framework.job_capabilities) ----------------
    job_finalizer = fields.POD_FINALIZER
    stops_by_deletion = True
    child_of_every_kind = True
    webhooks_in_managed_namespaces_only = True
    dispatched_without_managed_by = True
    stays_gated_when_dispatched = True

    def skip(self, job: Job) -> bool:
        return not fields.is_managed(job)

    # ComposedJobs: a pod group is one job of many Pods (pod_group).
    def composed_name(self, obj: Job) -> str | None:
        return fields.group_name(obj) or None

    def compose(self, namespace: str, name: str, members: Sequence[Job]) -> dict[str, Any]:
        return pod_group.compose(namespace, name, members)

    def members_of(self, composed: Job) -> list[dict[str, Any]]:
        return pod_group.members(composed)

    def composed_workload(self, workload: Workload, composed: Job) -> Workload:
        return pod_group.group_workload(workload, composed)

    def composed_name_of_workload(self, workload: Mapping[str, Any]) -> str | None:
        return pod_group.group_of_workload(workload)

    def match_composed(self, composed: Job, workload: Workload | None) -> ComposedMatch:
        return match_group(composed, workload)

    def prebuilt_workload_matches(self, composed: Job, workload: Workload) -> bool:
        return pod_group.matches_prebuilt_workload(composed, workload)

    # -- JobKind (a single Pod, or a group composed by `compose`) ------------------------
    def is_suspended(self, job: Job) -> bool:
        if pod_group.is_group(job):
            return pod_group.is_suspended(job)
        return admission.is_suspended(job)

    def managed_by(self, job: Job) -> str | None:
        return None

    def pod_sets(self, job: Job) -> list[PodSet]:
        if pod_group.is_group(job):
            return pod_group.group_pod_sets(job)
        return pod_pod_sets(job)

    def expected_running_pod_sets(
        self, workload: Workload, flavors: Mapping[str, ResourceFlavor]
    ) -> list[PodSet] | None:
        return admitted_pod_sets(workload, flavors)

    def start(
        self, job: Job, workload: Workload, flavors: Mapping[str, ResourceFlavor]
    ) -> dict[str, Any]:
        if pod_group.is_group(job):
            return pod_group.start_group(job, workload, flavors)
        return admission.start_pod(job, workload, flavors)

    def plan_stop(self, job: Job, workload: Workload | None) -> list[JobWrite]:
        if pod_group.is_group(job):
            return pod_group.plan_stop(job)
        return admission.plan_stop(job)

    def finished(self, job: Job) -> JobFinish | None:
        if pod_group.is_group(job):
            return pod_group.group_finished(job)
        return status.pod_finished(job)

    def is_active(self, job: Job) -> bool:
        return pod_group.is_group(job) and pod_group.is_active(job)

    def pods_ready(self, job: Job) -> bool:
        if pod_group.is_group(job):
            return pod_group.pods_ready(job)
        return status.pods_ready(job)

    def reclaimable_pods(self, job: Job) -> list[ReclaimablePod]:
        return pod_group.reclaimable_pods(job) if pod_group.is_group(job) else []

    def default(self, job: Job, ctx: WebhookContext) -> dict[str, Any]:
        return webhook.default_pod(job, ctx)

    def validate_create(self, job: Job, ctx: WebhookContext) -> list[FieldError]:
        return webhook.validate_create(job, ctx)

    def validate_update(self, old: Job, new: Job, ctx: WebhookContext) -> list[FieldError]:
        return webhook.validate_update(old, new, ctx)

    # MultiKueue: called per Pod (a group is copied member by member).
    def remote_job(self, local: Job, *, workload_name: str, origin: str) -> dict[str, Any]:
        return multikueue_adapter.remote_pod(local, workload_name=workload_name, origin=origin)

    def remote_status_sync(self, local: Job, remote: Job) -> StatusSync:
        return multikueue_adapter.remote_status_sync(local, remote)


POD: Final = PodKind()

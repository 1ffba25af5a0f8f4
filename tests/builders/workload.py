"""kueue.x-k8s.io/v1beta2 Workloads: created directly (as upstream's perf runner does),
as a job integration or the MultiKueue manager writes them, or with a status for code
that reads them (upstream: `utiltesting.MakeWorkload`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from tests.builders.base import KUEUE_API_VERSION, Json, ObjectBuilder, without_none
from tests.builders.pod import PodTemplate, Quantity, template_of


def pod_set_assignment(
    flavors: Mapping[str, str],
    resource_usage: Mapping[str, Quantity] | None = None,
    *,
    count: int | None = None,
    name: str = "main",
) -> Json:
    """One status.admission.podSetAssignments entry; `None` fields are left out."""
    usage = None if resource_usage is None else dict(resource_usage)
    return without_none(name=name, flavors=dict(flavors), resourceUsage=usage, count=count)


class Workload(ObjectBuilder):
    """A Workload with no pod sets until `pod_set` adds them."""

    api_version = KUEUE_API_VERSION
    kind = "Workload"

    def queue(self, local_queue: str) -> Self:
        """spec.queueName (a Job names its queue by label; a Workload in its spec)."""
        return self.spec(queueName=local_queue)

    def pod_set(
        self,
        name: str | None = "main",
        count: int = 1,
        *,
        template: PodTemplate | Mapping[str, Any] | None = None,
        requests: Mapping[str, Quantity] | None = None,
        min_count: int | None = None,
    ) -> Self:
        """Append a pod set: `template` (default `PodTemplate()`), with `requests` merged
        into its first container. `name=None` leaves the name out (decoders default it)."""
        pod_template = PodTemplate.from_obj(template_of(template or PodTemplate()))
        if requests is not None:
            pod_template.requests(requests)
        entry = without_none(
            name=name, count=count, minCount=min_count, template=pod_template.obj()
        )
        self._at("spec").setdefault("podSets", []).append(entry)
        return self

    def priority(self, value: int) -> Self:
        return self.spec(priority=value)

    def priority_class(self, name: str) -> Self:
        """spec.priorityClassRef to a WorkloadPriorityClass."""
        ref = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": name}
        return self.spec(priorityClassRef=ref)

    def active(self, active: bool = True) -> Self:
        return self.spec(active=active)

    def owned_by_job(
        self, name: str, uid: str, *, block_owner_deletion: bool | None = None
    ) -> Self:
        """Controlled by a batch/v1 Job, as the Job integration creates it."""
        return self.owned_by(
            "batch/v1", "Job", name, uid, block_owner_deletion=block_owner_deletion
        )

    # -- status --------------------------------------------------------------------------
    def admission(self, cluster_queue: str, *assignments: Json) -> Self:
        """status.admission (see `pod_set_assignment`); no assignments: an empty list."""
        admission = {"clusterQueue": cluster_queue, "podSetAssignments": list(assignments)}
        return self.status(admission=admission)

    def admission_check(
        self,
        name: str,
        state: str,
        *,
        message: str = "",
        last_transition_time: str | None = None,
    ) -> Self:
        """Append a status.admissionChecks entry (Pending, Ready, Retry, Rejected)."""
        entry = without_none(
            name=name, state=state, message=message, lastTransitionTime=last_transition_time
        )
        self._at("status").setdefault("admissionChecks", []).append(entry)
        return self

    def cluster_name(self, cluster: str) -> Self:
        """status.clusterName: the worker MultiKueue placed it on."""
        return self.status(clusterName=cluster)

    def nominated_clusters(self, *clusters: str) -> Self:
        return self.status(nominatedClusterNames=list(clusters))

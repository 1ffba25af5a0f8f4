"""What the job webhooks need to know about the cluster, and where they get it from.

The decisions themselves are pure (each kind's, through `integrations.framework`); they
only need a few facts the object alone does not carry: does a LocalQueue `default` exist
in the job's namespace, does the job's LocalQueue lead to a MultiKueue admission check, is
the namespace one whose queue-less jobs are managed, is the job's owner a kind queued as a
whole. The server asks a `JobContextProvider`
for them on every request. The hub backs it with its informer caches through
`CachedJobContext`: lookups are dict reads, so a webhook call never waits on the apiserver.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from core.adapters.kueue_manifests import label_selector
from core.api.admission_check import AdmissionCheck
from core.api.cluster_queue import ClusterQueue
from core.api.local_queue import LocalQueue
from core.api.multikueue import MULTIKUEUE_CONTROLLER_NAME
from core.engine.node_matching import label_selector_matches
from core.kube.object_meta import labels_of
from core.manager.configuration import Configuration
from integrations.framework import job_metadata
from integrations.framework.admission_review import AdmissionRequest
from integrations.framework.labels import DEFAULT_LOCAL_QUEUE_NAME
from integrations.framework.webhook_context import WebhookContext

T_co = TypeVar("T_co", covariant=True)


class JobContextProvider(Protocol):
    """Answers, for one admission request about a Job, the facts the webhook decides on."""

    async def job_context(self, request: AdmissionRequest) -> WebhookContext: ...


class NamedLookup(Protocol[T_co]):
    """A read-only cache by name (an informer's ObjectStore is one)."""

    def get_by_name(self, name: str, namespace: str | None = None) -> T_co | None: ...


@dataclass(frozen=True, slots=True)
class JobAdmissionSettings:
    """The parts of the hub's Configuration the Job webhooks follow."""

    manage_jobs_without_queue_name: bool = False
    managed_jobs_namespace_selector: Mapping[str, Any] | None = None
    """Namespaces whose queue-less Jobs are managed; None means every namespace."""
    managed_owner_kinds: frozenset[tuple[str, str]] = frozenset()
    """(API group, kind) of owners Kueue queues as a whole, e.g. ("jobset.x-k8s.io",
    "JobSet"): a Job they own does not get the `default` queue of its own."""
    multikueue_enabled: bool = True
    elastic_jobs: bool = True
    """The ElasticJobsViaWorkloadSlices gate (on by default, as v0.19)."""

    @classmethod
    def from_configuration(cls, configuration: Configuration) -> JobAdmissionSettings:
        """The settings a Configuration implies: owners queued as a whole are the enabled
        kinds whose children are enabled kinds too (a JobSet's Jobs)."""
        return cls(
            manage_jobs_without_queue_name=configuration.manage_jobs_without_queue_name,
            managed_jobs_namespace_selector=configuration.managed_jobs_namespace_selector,
            managed_owner_kinds=configuration.job_kinds.queued_as_a_whole,
            elastic_jobs=configuration.feature_gates.elastic_jobs,
        )


def _group(api_version: str) -> str:
    group, slash, _ = api_version.rpartition("/")
    return group if slash else ""


class CachedJobContext:
    """A JobContextProvider reading the hub's caches of queues, checks and namespaces."""

    def __init__(
        self,
        *,
        local_queues: NamedLookup[LocalQueue],
        cluster_queues: NamedLookup[ClusterQueue],
        admission_checks: NamedLookup[AdmissionCheck],
        namespaces: NamedLookup[Any] | None = None,
        settings: JobAdmissionSettings | None = None,
    ) -> None:
        self._local_queues = local_queues
        self._cluster_queues = cluster_queues
        self._admission_checks = admission_checks
        self._namespaces = namespaces
        self._settings = settings or JobAdmissionSettings()
        self._namespace_selector = label_selector(
            dict(self._settings.managed_jobs_namespace_selector)
            if self._settings.managed_jobs_namespace_selector is not None
            else None
        )

    async def job_context(self, request: AdmissionRequest) -> WebhookContext:
        namespace = request.namespace
        job = request.object or {}
        settings = self._settings
        owned_by_queued_kind = self._owner_is_managed_kind(job)
        return WebhookContext(
            default_local_queue_exists=self._local_queue(namespace, DEFAULT_LOCAL_QUEUE_NAME)
            is not None,
            leads_to_multikueue=lambda queue: self.leads_to_multikueue(namespace, queue),
            manage_jobs_without_queue_name=settings.manage_jobs_without_queue_name,
            namespace_selected=self.namespace_selected(namespace),
            owner_is_managed_kind=owned_by_queued_kind,
            # Its owner (a JobSet) is queued as a whole: the child is never suspended on
            # its own, or the owner's admitted pods could never start.
            ancestor_managed_by_kueue=owned_by_queued_kind,
            multikueue_enabled=settings.multikueue_enabled,
            elastic_jobs=settings.elastic_jobs,
        )

    def leads_to_multikueue(self, namespace: str, queue: str) -> bool:
        """Whether LocalQueue `queue`'s ClusterQueue has a MultiKueue admission check."""
        local_queue = self._local_queue(namespace, queue)
        if local_queue is None or not local_queue.spec.cluster_queue:
            return False
        cluster_queue = self._cluster_queues.get_by_name(local_queue.spec.cluster_queue)
        if cluster_queue is None or cluster_queue.spec.admission_checks_strategy is None:
            return False
        for rule in cluster_queue.spec.admission_checks_strategy.admission_checks:
            check = self._admission_checks.get_by_name(rule.name)
            if check is not None and check.spec.controller_name == MULTIKUEUE_CONTROLLER_NAME:
                return True
        return False

    def namespace_selected(self, namespace: str) -> bool:
        """Whether `managedJobsNamespaceSelector` matches; an unknown namespace does not."""
        if self._namespace_selector is None:
            return True
        if self._namespaces is None:
            return False
        found = self._namespaces.get_by_name(namespace)
        if found is None:
            return False
        return label_selector_matches(self._namespace_selector, labels_of(found))

    def _local_queue(self, namespace: str, name: str) -> LocalQueue | None:
        return self._local_queues.get_by_name(name, namespace) if namespace else None

    def _owner_is_managed_kind(self, job: Mapping[str, Any]) -> bool:
        owner = job_metadata.controller_owner(job)
        if owner is None:
            return False
        key = (_group(str(owner.get("apiVersion") or "")), str(owner.get("kind") or ""))
        return key in self._settings.managed_owner_kinds

"""What a job webhook needs to know about the cluster, beyond the object it is asked about.

The decisions are pure; the caller (the manager's webhook server) looks these facts up in
its caches for every request, so a webhook call never waits on the apiserver.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


def _never(_: str) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class WebhookContext:
    """Cluster facts about one admission request for a job of any kind."""

    default_local_queue_exists: bool = False
    """A LocalQueue named `default` exists in the job's namespace."""
    leads_to_multikueue: Callable[[str], bool] = field(default=_never)
    """Given a LocalQueue name in the job's namespace: does its ClusterQueue have an
    admission check whose controller is MultiKueue?"""
    manage_jobs_without_queue_name: bool = False
    """Configuration `manageJobsWithoutQueueName`."""
    namespace_selected: bool = True
    """`managedJobsNamespaceSelector` matches the job's namespace (True without one)."""
    owner_is_managed_kind: bool = False
    """The job's controller owner is a kind Kueue queues as a whole (e.g. a JobSet)."""
    ancestor_managed_by_kueue: bool = False
    """An ancestor job of this job is itself managed by Kueue."""
    multikueue_enabled: bool = True
    """The MultiKueue feature is on (it is by default)."""
    elastic_jobs: bool = True
    """The ElasticJobsViaWorkloadSlices gate is on (it is by default, as v0.19)."""

"""The URL paths the webhooks are served at, shared by the server and the configurations.

They follow controller-runtime's naming, as upstream Kueue's do: `/mutate-` or
`/validate-`, the group with dots as dashes, the version, the lowercase kind. Keeping them
in one table means a kind cannot be routed on the server but missing from the webhook
configuration, or the other way round.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from core.api.registry import KindInfo, kind_info
from integrations.batch_job.kind import BATCH_JOB
from integrations.framework.job_kind import JobResource


def _path(verb: str, group: str, version: str, kind: str) -> str:
    return f"/{verb}-{group.replace('.', '-')}-{version}-{kind.lower()}"


def job_mutate_path(resource: JobResource) -> str:
    """`/mutate-jobset-x-k8s-io-v1alpha2-jobset` for a JobSet, and so on."""
    return _path("mutate", resource.group, resource.version, resource.kind)


def job_validate_path(resource: JobResource) -> str:
    """`/validate-batch-v1-job` for a Job, and so on."""
    return _path("validate", resource.group, resource.version, resource.kind)


JOB_MUTATE_PATH: Final = job_mutate_path(BATCH_JOB.resource)
JOB_VALIDATE_PATH: Final = job_validate_path(BATCH_JOB.resource)

VALIDATED_KINDS: Final = (
    "ClusterQueue",
    "LocalQueue",
    "Cohort",
    "ResourceFlavor",
    "Workload",
    "AdmissionCheck",
    "MultiKueueConfig",
    "MultiKueueCluster",
    "WorkloadPriorityClass",
    "MultiKueueClusterSet",
)
"""The kueue.x-k8s.io kinds (and fleetq.dev's MultiKueueClusterSet, whose selector its schema
cannot check) whose creates and updates the hub validates."""


@dataclass(frozen=True, slots=True)
class ValidatedKind:
    """A kueue kind, the path its validating webhook is served at, and its subresources."""

    info: KindInfo
    path: str
    subresources: tuple[str, ...] = ()
    """Subresources whose updates are validated too (Workload status, as upstream)."""


def validate_path(info: KindInfo) -> str:
    """`/validate-kueue-x-k8s-io-v1beta2-clusterqueue` for ClusterQueue, and so on."""
    return _path("validate", info.group, info.version, info.kind)


def _validated(kind: str) -> ValidatedKind:
    info = kind_info(kind)
    subresources = ("status",) if kind == "Workload" else ()
    return ValidatedKind(info, validate_path(info), subresources)


VALIDATED: Final = tuple(_validated(kind) for kind in VALIDATED_KINDS)

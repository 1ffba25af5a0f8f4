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

JOB_MUTATE_PATH: Final = "/mutate-batch-v1-job"
JOB_VALIDATE_PATH: Final = "/validate-batch-v1-job"

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
)
"""The kueue.x-k8s.io kinds whose creates and updates the hub validates."""


@dataclass(frozen=True, slots=True)
class ValidatedKind:
    """A kueue kind, the path its validating webhook is served at, and its subresources."""

    info: KindInfo
    path: str
    subresources: tuple[str, ...] = ()
    """Subresources whose updates are validated too (Workload status, as upstream)."""


def validate_path(info: KindInfo) -> str:
    """`/validate-kueue-x-k8s-io-v1beta2-clusterqueue` for ClusterQueue, and so on."""
    group = info.group.replace(".", "-")
    return f"/validate-{group}-{info.version}-{info.kind.lower()}"


def _validated(kind: str) -> ValidatedKind:
    info = kind_info(kind)
    subresources = ("status",) if kind == "Workload" else ()
    return ValidatedKind(info, validate_path(info), subresources)


VALIDATED: Final = tuple(_validated(kind) for kind in VALIDATED_KINDS)

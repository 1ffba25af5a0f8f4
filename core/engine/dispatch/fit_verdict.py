"""What the dispatcher concludes about one worker for one workload, and why."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache

from core.engine.quantity import format_quantity

# Verdict messages quote the same few quotas and requests over and over: format each once.
quantity_text = lru_cache(maxsize=4096)(format_quantity)


class FitVerdict(StrEnum):
    FITS = "Fits"
    """The worker has the quota and a node for every pod right now."""
    DOES_NOT_FIT = "DoesNotFit"
    """A fresh report shows the workload would wait (or never run) there."""
    UNKNOWN = "Unknown"
    """No fresh report to judge by."""


class FitReason(StrEnum):
    """Why a worker does not fit, or is unknown; CamelCase like condition reasons."""

    NO_REPORT = "NoReport"
    STALE_REPORT = "StaleReport"
    CLUSTER_QUEUE_NOT_REPORTED = "ClusterQueueNotReported"
    NO_LOCAL_QUEUE = "NoLocalQueue"
    NO_CLUSTER_QUEUE = "NoClusterQueue"
    RESOURCE_UNAVAILABLE = "ResourceUnavailable"
    NO_ELIGIBLE_FLAVOR = "NoEligibleFlavor"
    EXCEEDS_NOMINAL_QUOTA = "ExceedsNominalQuota"
    INSUFFICIENT_UNUSED_QUOTA = "InsufficientUnusedQuota"
    NO_NODES = "NoNodes"
    INSUFFICIENT_NODE_CAPACITY = "InsufficientNodeCapacity"
    NO_TOPOLOGY_LEVEL = "NoTopologyLevel"
    TOPOLOGY_DOMAIN_TOO_SMALL = "TopologyDomainTooSmall"

    @property
    def transient(self) -> bool:
        """True when running workloads finishing could make the worker fit as it stands.

        The other reasons need the worker's configuration or nodes to change first, so the
        fallback tries such workers last.
        """
        return self in (
            FitReason.INSUFFICIENT_UNUSED_QUOTA,
            FitReason.INSUFFICIENT_NODE_CAPACITY,
            FitReason.TOPOLOGY_DOMAIN_TOO_SMALL,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerFit:
    """The verdict on one worker; `flavors` (per pod set: resource → flavor) when it fits."""

    worker: str
    verdict: FitVerdict
    reason: FitReason | None = None
    message: str = ""
    flavors: tuple[Mapping[str, str], ...] = ()

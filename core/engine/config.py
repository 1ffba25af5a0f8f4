"""Engine settings: the subset of upstream's Configuration that changes scheduling."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class FairSharingStrategy(StrEnum):
    """Rules a fair-sharing preemption must satisfy, tried in the configured order."""

    LESS_THAN_OR_EQUAL_TO_FINAL_SHARE = "LessThanOrEqualToFinalShare"
    LESS_THAN_INITIAL_SHARE = "LessThanInitialShare"


class RequeuingTimestamp(StrEnum):
    """Which time orders a workload evicted for PodsReady timeout back in its queue."""

    EVICTION = "Eviction"
    CREATION = "Creation"


@dataclass(frozen=True, slots=True, kw_only=True)
class FairSharingConfig:
    """Present (not None) in EngineConfig means fair sharing is on, as upstream."""

    preemption_strategies: tuple[FairSharingStrategy, ...] = (
        FairSharingStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,
        FairSharingStrategy.LESS_THAN_INITIAL_SHARE,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class WaitForPodsReadyConfig:
    timeout_seconds: float = 300.0
    block_admission: bool = False
    # None means "same as timeout_seconds"; 0 disables the recovery timeout.
    recovery_timeout_seconds: float | None = None
    requeuing_timestamp: RequeuingTimestamp = RequeuingTimestamp.EVICTION
    backoff_limit_count: int | None = None
    backoff_base_seconds: float = 60.0
    backoff_max_seconds: float = 3600.0

    @property
    def effective_recovery_timeout(self) -> float:
        if self.recovery_timeout_seconds is None:
            return self.timeout_seconds
        return self.recovery_timeout_seconds


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineConfig:
    fair_sharing: FairSharingConfig | None = None
    wait_for_pods_ready: WaitForPodsReadyConfig | None = None
    # True: an evicted workload gives its quota back at once (the simulator's model of a
    # job controller that stops pods instantly). False: the driver calls
    # Engine.complete_eviction(key) once the job's pods are gone, as upstream waits for.
    release_quota_on_eviction: bool = True
    # ElasticJobsViaWorkloadSlices: a workload naming the slice it `replaces` is admitted
    # with that slice's usage counted as its own (False: the link is ignored).
    workload_slices: bool = True
    # ConcurrentAdmission: a ClusterQueue's concurrentAdmissionPolicy queues its jobs as
    # variants, one per flavor (False: the policy is ignored, as upstream's gate off).
    concurrent_admission: bool = False

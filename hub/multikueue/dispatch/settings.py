"""How the MultiKueue dispatch behaves: the Configuration's multiKueue fields plus fleetq's own.

`from_configuration` fills in what the Configuration file carries: upstream's origin,
gcInterval, workerLostTimeout, dispatcherName and incrementalDispatcherConfig.stepSize, and
three of fleetq's own (`incrementalDispatcherConfig.roundTimeout`, fixed at 5 min
upstream, and `capacityAwareDispatcherConfig.nominationTimeout` and `.placementPolicy`).
The rest are tuning knobs with defaults.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.engine.dispatch.nomination import DEFAULT_NOMINATION_TIMEOUT_SECONDS
from core.engine.dispatch.placement import CAPACITY_AWARE_DISPATCHER
from core.engine.dispatch.placement_policy import PlacementPolicy
from core.manager.configuration import (
    ALL_AT_ONCE_DISPATCHER,
    DEFAULT_INCREMENTAL_STEP_SIZE,
    INCREMENTAL_DISPATCHER,
    Configuration,
)

__all__ = ["ALL_AT_ONCE_DISPATCHER", "INCREMENTAL_DISPATCHER", "DispatchSettings"]
DEFAULT_INCREMENTAL_ROUND_SECONDS = 300.0


@dataclass(frozen=True, slots=True, kw_only=True)
class DispatchSettings:
    """Everything the dispatch package reads; every duration is in seconds."""

    origin: str = "multikueue"
    dispatcher_name: str = CAPACITY_AWARE_DISPATCHER
    worker_lost_timeout_seconds: float = 900.0
    gc_interval_seconds: float = 60.0
    """0 turns garbage collection off (as upstream)."""
    incremental_step_size: int = DEFAULT_INCREMENTAL_STEP_SIZE
    incremental_round_seconds: float = DEFAULT_INCREMENTAL_ROUND_SECONDS
    nomination_timeout_seconds: float = DEFAULT_NOMINATION_TIMEOUT_SECONDS
    """How long the capacity-aware dispatcher waits on one nominee before moving on."""
    placement_policy: PlacementPolicy = PlacementPolicy.SPREAD
    """Which of the workers that fit the capacity-aware dispatcher nominates."""
    local_suspended_retry_seconds: float = 2.0
    """Wait before copying a remote Job's status again while the local Job is suspended."""
    local_queue_ttl_seconds: float = 30.0
    """How long a worker's LocalQueue → ClusterQueue answer is reused."""
    workers: int = 32
    """Workloads reconciled at the same time. A pass mostly waits on round trips (a status
    write on the manager, a create on a worker), so this bounds dispatch throughput at
    about workers / round-trip time: 4 held 50 jobs/s to ~15/s with seconds of queueing."""

    @classmethod
    def from_configuration(
        cls, configuration: Configuration, **overrides: object
    ) -> DispatchSettings:
        mk = configuration.multikueue
        values: dict[str, object] = {
            "origin": mk.origin,
            "dispatcher_name": mk.dispatcher_name,
            "worker_lost_timeout_seconds": mk.worker_lost_timeout_seconds,
            "gc_interval_seconds": mk.gc_interval_seconds,
            "incremental_step_size": mk.incremental_step_size,
            "incremental_round_seconds": mk.incremental_round_seconds,
            "nomination_timeout_seconds": mk.nomination_timeout_seconds,
            "placement_policy": mk.placement_policy,
        }
        values.update(overrides)
        return cls(**values)  # type: ignore[arg-type]

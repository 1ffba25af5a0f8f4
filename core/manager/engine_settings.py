"""The engine settings a hub runs with, taken from its Configuration.

Unlike the simulator, a live hub holds a victim's quota until its job has really stopped
(`release_quota_on_eviction=False`): the job controller confirms the stop with
`Engine.complete_eviction`, as upstream's job reconciler clears the reservation only once
the job is inactive.
"""

from __future__ import annotations

from core.engine.config import (
    EngineConfig,
    FairSharingConfig,
    FairSharingStrategy,
    RequeuingTimestamp,
    WaitForPodsReadyConfig,
)
from core.manager.configuration import Configuration


def engine_config_for(configuration: Configuration) -> EngineConfig:
    fair = None
    if configuration.fair_sharing_strategies is not None:
        fair = FairSharingConfig(
            preemption_strategies=tuple(
                FairSharingStrategy(s) for s in configuration.fair_sharing_strategies
            )
        )
    wait = None
    source = configuration.wait_for_pods_ready
    if source is not None:
        wait = WaitForPodsReadyConfig(
            timeout_seconds=source.timeout_seconds,
            block_admission=source.block_admission,
            recovery_timeout_seconds=source.recovery_timeout_seconds,
            requeuing_timestamp=RequeuingTimestamp(source.requeuing.timestamp),
            backoff_limit_count=source.requeuing.backoff_limit_count,
            backoff_base_seconds=float(source.requeuing.backoff_base_seconds),
            backoff_max_seconds=float(source.requeuing.backoff_max_seconds),
        )
    return EngineConfig(
        fair_sharing=fair,
        wait_for_pods_ready=wait,
        release_quota_on_eviction=False,
        workload_slices=configuration.feature_gates.elastic_jobs,
        concurrent_admission=configuration.feature_gates.concurrent_admission,
    )

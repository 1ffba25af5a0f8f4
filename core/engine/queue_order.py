"""The timestamp that orders a workload in its queue (upstream's GetQueueOrderTimestamp).

A workload evicted for a PodsReady timeout (with the `Eviction` requeuing timestamp) or
by an admission check queues by the time of that eviction; every other workload by its
creation time.
"""

from __future__ import annotations

from core.api.workload_conditions import WorkloadReason
from core.engine.config import EngineConfig, RequeuingTimestamp
from core.engine.workload_state import EVICTED, WorkloadState


def queue_order_time(ws: WorkloadState, config: EngineConfig) -> float:
    cond = ws.conditions.get(EVICTED)
    if cond is not None and cond.status:
        if cond.reason == WorkloadReason.PODS_READY_TIMEOUT:
            wfpr = config.wait_for_pods_ready
            timestamp = wfpr.requeuing_timestamp if wfpr else RequeuingTimestamp.EVICTION
            if timestamp == RequeuingTimestamp.EVICTION:
                return cond.last_transition_time
        elif cond.reason == WorkloadReason.ADMISSION_CHECK:
            return cond.last_transition_time
    return ws.spec.creation_time

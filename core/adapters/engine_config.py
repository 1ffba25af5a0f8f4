"""Engine settings from the scheduling part of upstream's Configuration (config.kueue.x-k8s.io).

Accepts the `fairSharing` and `waitForPodsReady` sections as they appear in the
manager's configuration file (durations like "5m", "300s" or plain seconds).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from core.engine.config import (
    EngineConfig,
    FairSharingConfig,
    FairSharingStrategy,
    RequeuingTimestamp,
    WaitForPodsReadyConfig,
)

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s|us|ns)")
_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


def parse_duration(value: Any) -> float:
    """Seconds in a Go duration string ("1h30m", "300s") or a number of seconds."""
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip()
    if not text:
        raise ValueError("empty duration")
    total, pos = 0.0, 0
    for match in _DURATION.finditer(text):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNIT[match.group(2)]
        pos = match.end()
    if pos != len(text):
        raise ValueError(f"not a duration: {value!r}")
    return total


def engine_config_from_dict(data: Mapping[str, Any] | None) -> EngineConfig:
    data = data or {}
    unknown = set(data) - {"fairSharing", "waitForPodsReady", "releaseQuotaOnEviction"}
    if unknown:
        raise ValueError(f"unsupported engine configuration field(s): {', '.join(sorted(unknown))}")
    fair = None
    if data.get("fairSharing") is not None:
        strategies = tuple(
            FairSharingStrategy(s) for s in data["fairSharing"].get("preemptionStrategies") or ()
        )
        fair = (
            FairSharingConfig(preemption_strategies=strategies)
            if strategies
            else FairSharingConfig()
        )
    wfpr = None
    if data.get("waitForPodsReady") is not None:
        w = data["waitForPodsReady"]
        rs = w.get("requeuingStrategy") or {}
        recovery = w.get("recoveryTimeout")
        wfpr = WaitForPodsReadyConfig(
            timeout_seconds=parse_duration(w.get("timeout", "5m")),
            block_admission=bool(w.get("blockAdmission", False)),
            recovery_timeout_seconds=parse_duration(recovery) if recovery is not None else None,
            requeuing_timestamp=RequeuingTimestamp(rs.get("timestamp", "Eviction")),
            backoff_limit_count=rs.get("backoffLimitCount"),
            backoff_base_seconds=float(rs.get("backoffBaseSeconds", 60)),
            backoff_max_seconds=float(rs.get("backoffMaxSeconds", 3600)),
        )
    return EngineConfig(
        fair_sharing=fair,
        wait_for_pods_ready=wfpr,
        release_quota_on_eviction=bool(data.get("releaseQuotaOnEviction", True)),
    )

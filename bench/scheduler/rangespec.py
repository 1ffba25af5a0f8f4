"""The bars upstream's scheduler-perf checker holds a run to (`rangespec.yaml`).

Upstream keeps, beside each generator config, the bounds its CI runs must stay within:
the manager's wall time (`cmd.maxWallMs`), a minimum ClusterQueue usage per queue class
and a maximum average time to admission per workload class. Reading them lets the table
say, for each manager, whether it would have passed upstream's own check.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

RANGESPEC_FILE = "rangespec.yaml"


class RangespecError(ValueError):
    """The file is not upstream's rangespec shape; the message names the file and field."""


@dataclass(frozen=True, slots=True)
class Bars:
    """Upstream's bounds, in the table's units (seconds, percent)."""

    max_wall_s: float | None = None
    min_usage_percent: dict[str, float] = field(default_factory=dict)
    """Per ClusterQueue class."""
    max_avg_admission_s: dict[str, float] = field(default_factory=dict)
    """Per workload class."""

    def to_json(self) -> dict[str, Any]:
        return {
            "max_wall_s": self.max_wall_s,
            "min_usage_percent": dict(self.min_usage_percent),
            "max_avg_admission_s": dict(self.max_avg_admission_s),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Bars | None:
        if not data:
            return None
        return cls(
            data.get("max_wall_s"),
            dict(data.get("min_usage_percent") or {}),
            dict(data.get("max_avg_admission_s") or {}),
        )


def _numbers(raw: Any, where: str, scale: float) -> dict[str, float]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise RangespecError(f"{where}: expected a map of class name to number")
    out: dict[str, float] = {}
    for name, value in raw.items():
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise RangespecError(f"{where}.{name}: expected a number, got {value!r}")
        out[str(name)] = float(value) * scale
    return out


def read_rangespec(path: Path) -> Bars:
    """Upstream's bounds from `path`; milliseconds become seconds."""
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise RangespecError(f"{path}: {exc}") from exc
    if not isinstance(data, dict):
        raise RangespecError(f"{path}: expected a mapping at the top")
    wall_ms = (data.get("cmd") or {}).get("maxWallMs")
    if wall_ms is not None and not isinstance(wall_ms, int | float):
        raise RangespecError(f"{path}: cmd.maxWallMs: expected a number, got {wall_ms!r}")
    return Bars(
        None if wall_ms is None else float(wall_ms) / 1000.0,
        _numbers(
            data.get("clusterQueueClassesMinUsage"), f"{path}: clusterQueueClassesMinUsage", 1
        ),
        _numbers(
            data.get("wlClassesMaxAvgTimeToAdmissionMs"),
            f"{path}: wlClassesMaxAvgTimeToAdmissionMs",
            0.001,
        ),
    )


def rangespec_beside(generator_config: Path) -> Path | None:
    """Upstream keeps a config's rangespec in the same folder; None when there is none."""
    candidate = generator_config.with_name(RANGESPEC_FILE)
    return candidate if candidate.is_file() else None

"""Upstream Kueue's metric names and labels, read from its Go source in the module cache.

`pkg/metrics/metrics.go` declares every vector as `prometheus.New<Kind>Vec(<Kind>Opts{
Subsystem: constants.<X>Name, Name: "..."}, [append(]
[]string{labels...}[, custom...)])`; the custom labels are empty by default, so
the literal list is what a default upstream serves. The full name is `<subsystem>_<name>`.
"""

from __future__ import annotations

import re
from pathlib import Path

from devfleet.operators.go_module import module_dir
from devfleet.toolchain import KUEUE_VERSION

_REPO = Path(__file__).resolve().parents[3]
_SUBSYSTEMS = {"KueueName": "kueue", "MultiKueueName": "multikueue"}
_VECTOR = re.compile(r"prometheus\.New(?P<kind>Counter|Gauge|Histogram)Vec\(")
_SUBSYSTEM = re.compile(r"Subsystem:\s*constants\.(?P<const>\w+)")
_NAME = re.compile(r'\bName:\s*"(?P<name>[a-z_]+)"')
_LABELS = re.compile(r"\[\]string\{(?P<labels>[^}]*)\}")


def upstream_metrics_source() -> str:
    module = module_dir("sigs.k8s.io/kueue", KUEUE_VERSION, _REPO / "tools" / "go" / "kueue")
    return (module / "pkg" / "metrics" / "metrics.go").read_text()


def parse_metric_declarations(source: str) -> dict[str, tuple[str, ...]]:
    """Full metric name → its label names in order, for every vector `source` declares."""
    starts = [m.start() for m in _VECTOR.finditer(source)]
    out: dict[str, tuple[str, ...]] = {}
    for index, start in enumerate(starts):
        end = starts[index + 1] if index + 1 < len(starts) else len(source)
        block = source[start:end]
        subsystem, name, labels = (
            _SUBSYSTEM.search(block),
            _NAME.search(block),
            _LABELS.search(block),
        )
        if subsystem is None or name is None or labels is None:
            raise ValueError(f"cannot read the metric declared at offset {start}")
        prefix = _SUBSYSTEMS[subsystem["const"]]
        out[f"{prefix}_{name['name']}"] = tuple(re.findall(r'"([a-z_]+)"', labels["labels"]))
    return out

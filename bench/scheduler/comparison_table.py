"""The side-by-side table: each manager's headline figures and the ratio fleetq/upstream.

Works on legs as stored in JSON (`LegResult.to_json()`), so a saved result prints the same
table again (`run.py --show FILE`). A ratio below 1 favours fleetq where lower is better
(time, CPU, memory, writes, waiting) and above 1 where higher is better (usage).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench.scheduler.rangespec import Bars

CLASS_ORDER = ("small", "medium", "large")


@dataclass(frozen=True, slots=True)
class Figure:
    label: str
    values: dict[str, float | None]
    higher_is_better: bool = False
    bar: float | None = None
    """Upstream's rangespec bound: a maximum, or a minimum when `higher_is_better`."""

    def misses_bar(self, manager: str) -> bool | None:
        """Whether the manager's figure is outside the bar; None when either is unknown."""
        value = self.values.get(manager)
        if self.bar is None or value is None:
            return None
        return value < self.bar if self.higher_is_better else value > self.bar


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _per(numerator: Any, denominator: Any) -> float | None:
    top, bottom = _num(numerator), _num(denominator)
    return None if top is None or not bottom else top / bottom


def _writes_except_events(leg: Mapping[str, Any]) -> float | None:
    by_kind = leg.get("manager_writes_by_kind") or {}
    if leg.get("manager_writes") is None:
        return None
    return float(sum(n for kind, n in by_kind.items() if not kind.endswith(" events")))


def _total(leg: Mapping[str, Any], key: str) -> float | None:
    counts = leg.get(key)
    return float(sum(counts.values())) if counts else None


def _class_names(legs: Mapping[str, Mapping[str, Any]], key: str) -> list[str]:
    names = {name for leg in legs.values() for name in (leg.get(key) or {})}
    known = [name for name in CLASS_ORDER if name in names]
    return known + sorted(names - set(CLASS_ORDER))


def headline_figures(
    legs: Mapping[str, Mapping[str, Any]], bars: Bars | None = None
) -> list[Figure]:
    """The rows of the table, in reading order, for the managers in `legs`; with `bars`,
    the rows upstream's rangespec bounds carry their bound."""
    bars = bars or Bars()

    def row(
        label: str, pick: Any, higher_is_better: bool = False, bar: float | None = None
    ) -> Figure:
        return Figure(label, {m: pick(leg) for m, leg in legs.items()}, higher_is_better, bar)

    figures = [
        row("run wall time (s)", lambda leg: _num(leg.get("run_wall_s")), bar=bars.max_wall_s),
        row("manager CPU during run (s)", lambda leg: _num(leg.get("manager_cpu_run_s"))),
        row("manager CPU, whole process (s)", lambda leg: _num(leg.get("manager_cpu_total_s"))),
        row("manager peak RSS (MiB)", lambda leg: _num(leg.get("manager_peak_rss_mib"))),
        row(
            "apiserver+etcd CPU during run (s)",
            lambda leg: _num(leg.get("control_plane_cpu_run_s")),
        ),
        row("manager apiserver writes", lambda leg: _num(leg.get("manager_writes"))),
        row(
            "manager writes per workload",
            lambda leg: _per(leg.get("manager_writes"), leg.get("workloads")),
        ),
        row(
            "  of which not Events, per workload",
            lambda leg: _per(_writes_except_events(leg), leg.get("workloads")),
        ),
    ]
    for name in _class_names(legs, "workload_classes"):
        figures.append(
            row(
                f"avg time to admission, {name} (s)",
                lambda leg, n=name: _num(
                    (leg.get("workload_classes") or {}).get(n, {}).get("avg_time_to_admission_s")
                ),
                bar=bars.max_avg_admission_s.get(name),
            )
        )
    for name in _class_names(legs, "workload_classes"):
        figures.append(
            row(
                f"evictions, {name}",
                lambda leg, n=name: _num(
                    (leg.get("workload_classes") or {}).get(n, {}).get("evictions")
                ),
            )
        )
    for name in _class_names(legs, "queue_usage_percent"):
        figures.append(
            row(
                f"ClusterQueue usage, {name} (%, higher=better)",
                lambda leg, n=name: _num((leg.get("queue_usage_percent") or {}).get(n)),
                higher_is_better=True,
                bar=bars.min_usage_percent.get(name),
            )
        )
    figures.append(row("workloads recorded", lambda leg: _num(leg.get("workloads"))))
    figures.append(row("  never admitted", lambda leg: _total(leg, "never_admitted")))
    figures.append(row("  not finished", lambda leg: _total(leg, "not_finished")))
    figures.append(
        row(
            "admission cycles (metric)",
            lambda leg: _num((leg.get("metrics") or {}).get("admission_attempts")),
        )
    )
    return figures


def ratio(figure: Figure, numerator: str, denominator: str) -> float | None:
    top, bottom = figure.values.get(numerator), figure.values.get(denominator)
    if top is None or bottom is None or bottom == 0:
        return None
    return top / bottom


def _cell(value: float | None) -> str:
    if value is None:
        return "-"
    if value == int(value):
        return f"{int(value)}"
    return f"{value:.2f}" if abs(value) < 1000 else f"{value:.0f}"


def _bar_cells(figure: Figure, managers: Sequence[str]) -> list[str]:
    """The bound (`<= 482`, `>= 57`) and who misses it, or blanks for an unbounded row."""
    if figure.bar is None:
        return ["", ""]
    sign = ">=" if figure.higher_is_better else "<="
    missed = [m for m in managers if figure.misses_bar(m)]
    unknown = all(figure.misses_bar(m) is None for m in managers)
    return [f"{sign} {_cell(figure.bar)}", "?" if unknown else (", ".join(missed) or "none")]


def format_table(
    legs: Mapping[str, Mapping[str, Any]],
    order: Sequence[str] = ("upstream", "fleetq"),
    bars: Bars | None = None,
) -> str:
    """A plain-text table: one column per manager, then fleetq/upstream when both ran, then
    upstream's rangespec bar and the managers missing it when `bars` are given."""
    managers = [m for m in order if m in legs] + [m for m in legs if m not in order]
    both = "upstream" in legs and "fleetq" in legs
    figures = headline_figures({m: legs[m] for m in managers}, bars)
    header = ["figure", *managers] + (["fleetq/upstream"] if both else [])
    if bars is not None:
        header += ["upstream's bar", "missed by"]
    rows = [header]
    for figure in figures:
        cells = [figure.label] + [_cell(figure.values.get(m)) for m in managers]
        if both:
            value = ratio(figure, "fleetq", "upstream")
            cells.append("-" if value is None else f"{value:.2f}")
        if bars is not None:
            cells += _bar_cells(figure, managers)
        rows.append(cells)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = []
    for index, cells in enumerate(rows):
        first = cells[0].ljust(widths[0])
        rest = [cell.rjust(width) for cell, width in zip(cells[1:], widths[1:], strict=True)]
        lines.append("  ".join([first, *rest]).rstrip())
        if index == 0:
            lines.append("-" * len(lines[0]))
    if any(_total(legs[m], "never_admitted") for m in managers):
        lines.append("note: averages count never-admitted workloads as 0 s (upstream's rule)")
    for manager in managers:
        error = legs[manager].get("error")
        if error:
            lines.append(f"{manager}: FAILED: {str(error).splitlines()[0]}")
        elif legs[manager].get("timed_out"):
            lines.append(f"{manager}: TIMED OUT: figures cover the run up to the deadline")
    return "\n".join(lines)

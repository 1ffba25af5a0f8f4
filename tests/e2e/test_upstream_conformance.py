"""Upstream Kueue v0.19.2's own e2e suite against fleetq, in every `make test`.

`singlecluster/baseline`'s slice `devfleet.conformance.CI_LABEL_FILTER` (Jobs, cohorts,
fair sharing, kubectl-kueue, the visibility API) runs against a hub on a fleet of its own
(`fleetq dev conformance --ci` does the same by hand), minus `CI_SKIPS`, each skipped for a
reason given there. Every spec that runs must pass: a failure here is a place where a
Kueue user's expectations and fleetq part (docs/conformance.md keeps the full table).
"""

from __future__ import annotations

import os

from devfleet.conformance import CI_LABEL_FILTER, CI_SKIPS, ConformanceOptions, run_conformance

MIN_PASSED = 26
"""What this slice passed when it joined `make test` (14 Job/cohort/fair-sharing/kueuectl
specs + 12 visibility specs): fewer means specs stopped running, not only failing."""


def test_upstreams_baseline_slice_passes_against_fleetq() -> None:
    options = ConformanceOptions(
        fleet_name=f"conformance-{os.getpid()}",
        label_filter=CI_LABEL_FILTER,
        skip=tuple(CI_SKIPS),
        suite_timeout="12m",
    )
    summary = run_conformance(options, say=lambda line: print(line, flush=True))
    failures = [f"{spec.name}: {spec.message}" for spec in summary.failed]
    failures += [f"{node.name}: {node.message}" for node in summary.failed_suite_nodes]
    assert failures == []
    assert len(summary.passed) >= MIN_PASSED, summary.line()

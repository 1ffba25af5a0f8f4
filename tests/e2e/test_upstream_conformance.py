"""Upstream Kueue v0.19.2's own e2e suites against fleetq, in every `make test`.

For each suite, its CI slice (`devfleet.conformance_suites`, `Suite.ci`) runs against a
hub on a fleet of its own (`fleetq dev conformance --suite S --ci` does the same by hand):
`singlecluster/baseline`'s Jobs, cohorts, fair sharing, kubectl-kueue, the visibility API,
Pods, Deployments and StatefulSets; `singlecluster/extended`'s JobSet, MPIJob, PyTorchJob,
JAXJob and TrainJob specs with the real operators; all of `multikueue/baseline`, the hub as
manager of two workers running the agent. Specs of `ci.skips` are skipped, each
for the reason given there. Every spec that runs must pass: a failure here is a place
where a Kueue user's expectations and fleetq part (docs/conformance.md keeps the table).
"""

from __future__ import annotations

import os

import pytest

from devfleet.conformance import ConformanceOptions, run_conformance
from devfleet.conformance_suites import BASELINE, EXTENDED, MULTIKUEUE, Suite


@pytest.mark.parametrize("suite", [BASELINE, EXTENDED, MULTIKUEUE], ids=lambda suite: suite.name)
def test_upstreams_suite_slice_passes_against_fleetq(suite: Suite) -> None:
    options = ConformanceOptions(
        fleet_name=f"{suite.fleet_name}-{os.getpid()}",
        suite=suite,
        label_filter=suite.ci.label_filter,
        skip=tuple(suite.ci.skips),
        suite_timeout="12m",
    )
    summary = run_conformance(options, say=lambda line: print(line, flush=True))
    failures = [f"{spec.name}: {spec.message}" for spec in summary.failed]
    failures += [f"{node.name}: {node.message}" for node in summary.failed_suite_nodes]
    assert failures == []
    assert len(summary.passed) >= suite.ci.min_passed, summary.line()

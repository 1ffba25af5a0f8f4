"""Upstream Kueue's e2e suites `fleetq dev conformance` can run, and what each needs.

Each suite is one ginkgo test binary of the conformance tool. `singlecluster/baseline`
needs Kueue alone; `singlecluster/extended` needs the job operators too, which a full
fleet runs out of cluster (devfleet.operators), and its BeforeSuite waits for each
operator's Deployment to be Available in the namespace upstream's install uses — the
presence-only stand-ins of `operator_stand_ins` (devfleet.conformance_stand_in).
`multikueue/baseline` needs three clusters: the hub as the MultiKueue manager and the
worker agent as Kueue on each of two workers (devfleet.conformance_multikueue).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final


@dataclass(frozen=True, slots=True)
class CiSlice:
    """What `make test` runs of a suite (tests/e2e/test_upstream_conformance.py) and
    `fleetq dev conformance --ci` by hand: every selected spec but `skips` must pass."""

    label_filter: str
    skips: Mapping[str, str] = field(default_factory=dict)
    """Spec-name regexps skipped (ginkgo --skip), each with the reason."""
    min_passed: int = 0
    """What the slice passed when it joined `make test`: fewer means specs stopped
    running, not only failing."""


@dataclass(frozen=True, slots=True)
class Suite:
    name: str
    """As `--suite` takes it, and as upstream's tree names it (`singlecluster/baseline`)."""
    binary: str
    package_dir: Path
    default_label_filter: str
    configuration: Path
    """Upstream's e2e Configuration for this suite, inside the module (the hub runs it)."""
    ci: CiSlice
    operators: tuple[str, ...] = ()
    """Catalog names of the operators the suite's specs drive (devfleet.operators)."""
    workers: int = 0
    """Worker clusters the suite drives (each with the fleetq agent as its Kueue); 0: the
    manager alone."""
    fleet_name: str = "conformance"
    """The fleet it runs on by default: suites of different shapes never share one."""

    @property
    def junit_name(self) -> str:
        return f"junit-{self.name.replace('/', '-')}.xml"


@dataclass(frozen=True, slots=True)
class OperatorDeployment:
    """Where upstream's install puts an operator, as its e2e BeforeSuite looks for it."""

    namespace: str
    name: str


OPERATOR_DEPLOYMENTS: Final[dict[str, OperatorDeployment]] = {
    # test/util/e2e.go Wait*Availability of v0.19.2
    "jobset": OperatorDeployment("jobset-system", "jobset-controller-manager"),
    "kuberay": OperatorDeployment("default", "kuberay-operator"),
    "trainer": OperatorDeployment("kubeflow-system", "kubeflow-trainer-controller-manager"),
    "training-operator": OperatorDeployment("kubeflow", "training-operator"),
    "mpi-operator": OperatorDeployment("mpi-operator", "mpi-operator"),
    "lws": OperatorDeployment("lws-system", "lws-controller-manager"),
}

BASELINE_LABEL_FILTER: Final = (
    "feature:job || feature:cohort || feature:fairsharing || feature:kueuectl"
)
EXTENDED_CI_LABEL_FILTER: Final = (
    "feature:jobset || feature:trainjob || feature:mpijob || feature:pytorchjob || feature:jaxjob"
)
"""The extended features `make test` runs. KubeRay's and LeaderWorkerSet's specs (3 and 20
passing) are left to `fleetq dev conformance --suite extended`, for CI time."""
EXTENDED_LABEL_FILTER: Final = (
    f"{EXTENDED_CI_LABEL_FILTER} || feature:kuberay || feature:leaderworkerset"
)
"""Every extended feature whose kind fleetq has; `feature:appwrapper` is left out
(fleetq has no AppWrapper kind)."""

BASELINE: Final = Suite(
    name="singlecluster/baseline",
    binary="singlecluster-baseline.test",
    package_dir=Path("test/e2e/singlecluster/baseline"),
    default_label_filter=BASELINE_LABEL_FILTER,
    configuration=Path("test/e2e/config/default/controller_manager_config.yaml"),
    ci=CiSlice(
        label_filter=(
            f"{BASELINE_LABEL_FILTER} || feature:visibility || feature:pod || feature:deployment"
            " || feature:statefulset || feature:concurrent-admission"
        ),
        skips={
            "should allow to preempt the lower priority group": (
                "fleet gap: the group is preempted before kwok runs its Pods, and a deleted"
                " Pod still Pending stays Pending (the agnhost termination stage ends only"
                " Running ones; a kubelet would fail it), so the spec waits for Failed Pods"
            ),
        },
        min_passed=49,
    ),
)
EXTENDED: Final = Suite(
    name="singlecluster/extended",
    binary="singlecluster-extended.test",
    package_dir=Path("test/e2e/singlecluster/extended"),
    default_label_filter=EXTENDED_LABEL_FILTER,
    configuration=Path("test/e2e/config/extended/controller_manager_config.yaml"),
    ci=CiSlice(
        label_filter=EXTENDED_CI_LABEL_FILTER,
        skips={
            "Should allow to suspend a TrainJob when injected nodeSelector": (
                "reads spec.runtimePatches, a field of Trainer v2.1+; the fleet runs Trainer"
                " v2.0.0, where Kueue's nodeSelector goes into podSpecOverrides"
            ),
        },
        min_passed=7,
    ),
    operators=("jobset", "kuberay", "trainer", "training-operator", "mpi-operator", "lws"),
)
MULTIKUEUE: Final = Suite(
    name="multikueue/baseline",
    binary="multikueue-baseline.test",
    package_dir=Path("test/e2e/multikueue/baseline"),
    default_label_filter="",
    configuration=Path("test/e2e/config/multikueue/baseline/controller_manager_config.yaml"),
    ci=CiSlice(label_filter="", min_passed=18),
    workers=2,
    fleet_name="conformance-multikueue",
)
"""Its specs carry no feature labels: the default, and the CI slice, run all 18."""
SUITES: Final[dict[str, Suite]] = {suite.name: suite for suite in (BASELINE, EXTENDED, MULTIKUEUE)}
SUITE_ALIASES: Final[dict[str, str]] = {
    "baseline": BASELINE.name,
    "extended": EXTENDED.name,
    "multikueue": MULTIKUEUE.name,
}


def suite_named(name: str) -> Suite:
    """The suite `--suite` names (full or short name); KeyError naming the choices."""
    suite = SUITES.get(SUITE_ALIASES.get(name, name))
    if suite is None:
        choices = ", ".join([*SUITE_ALIASES, *SUITES])
        raise KeyError(f"unknown suite {name!r}; choose one of: {choices}")
    return suite


def operator_stand_ins(suite: Suite) -> list[OperatorDeployment]:
    """The operator Deployments the suite's BeforeSuite waits for."""
    return [OPERATOR_DEPLOYMENTS[name] for name in suite.operators]

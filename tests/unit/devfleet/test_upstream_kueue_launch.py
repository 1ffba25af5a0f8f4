"""Which upstream Kueue binary a launch runs, and the worker budget the patched one gets."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from devfleet import toolchain
from devfleet.upstream_kueue import (
    WORKER_BURST_ENV,
    WORKER_QPS_ENV,
    UpstreamKueue,
    UpstreamKueueError,
    UpstreamKueueOptions,
    upstream_crds,
)


@pytest.fixture
def launch(tmp_path: Path) -> Iterator[Callable[..., UpstreamKueue]]:
    """Launch objects (nothing started); their temp directories are removed afterwards."""
    made: list[UpstreamKueue] = []

    def make(**options: object) -> UpstreamKueue:
        kueue = UpstreamKueue(tmp_path / "kubeconfig", options=UpstreamKueueOptions(**options))  # type: ignore[arg-type]
        made.append(kueue)
        return kueue

    yield make
    for kueue in made:
        shutil.rmtree(kueue.workdir, ignore_errors=True)


def test_each_version_runs_its_own_binary_and_crds(launch: Callable[..., UpstreamKueue]) -> None:
    for version in toolchain.KUEUE_VERSIONS:
        kueue = launch(version=version)
        assert kueue._tool() == toolchain.kueue_tool(version)
        assert upstream_crds(version).parts[-5] == f"kueue@{version}"


def test_an_unknown_version_is_a_clear_error(launch: Callable[..., UpstreamKueue]) -> None:
    kueue = launch(version="v0.18.0")
    with pytest.raises(UpstreamKueueError, match=r"v0\.18\.0 is not built here"):
        kueue.command()


def test_only_the_budget_build_gets_the_worker_budget(launch: Callable[..., UpstreamKueue]) -> None:
    plain = launch(qps=400.0, burst=800)
    assert WORKER_QPS_ENV not in plain.environment()
    budget = launch(qps=400.0, burst=800, worker_client_budget=True)
    assert budget._tool().name == "kueue-worker-budget"
    env = budget.environment()
    assert (env[WORKER_QPS_ENV], env[WORKER_BURST_ENV]) == ("400.0", "800")


def test_the_budget_build_exists_at_the_yardstick_version_only(
    launch: Callable[..., UpstreamKueue],
) -> None:
    kueue = launch(version=toolchain.KUEUE_PREVIOUS_VERSION, worker_client_budget=True)
    with pytest.raises(UpstreamKueueError, match="kueue-worker-budget is built at"):
        kueue.command()

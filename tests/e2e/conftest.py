"""E2E fixtures: the shared MultiKueue fleet (tests/e2e/multikueue_fixtures.py) and the
single-cluster hub on worker-1 (tests/e2e/single_cluster_hub.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.multikueue_fixtures import (
    mk_namespace,
    mk_namespace_factory,
    multikueue_fleet,
    multikueue_session,
    stop_when_unused,
)
from tests.e2e.single_cluster_hub import gpu_queue, hub_process

__all__ = [
    "gpu_queue",
    "hub_process",
    "mk_namespace",
    "mk_namespace_factory",
    "multikueue_fleet",
    "multikueue_session",
]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """After the test's own fixtures are torn down, stop the shared fleet if unneeded."""
    try:
        yield
    finally:
        stop_when_unused(item, nextitem)

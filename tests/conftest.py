"""Session-wide test fixtures: one real local fleet per test session, a namespace per test.

The fleet starts once (lite when only integration tests are collected; when any e2e test is,
the workers are full — scheduler, controller-manager and kwok nodes — and the manager stays
API-only) and is always torn down, also when
a test fails, the run is interrupted (Ctrl-C, SIGTERM) or an earlier run was killed outright
(its fleet is found by the dead pid in its name and removed). Set FLEETQ_TEST_FLEET=<name>
to run the tests against an already running fleet instead (it is left running).

Without the tools built, real-cluster tests fail under CI (CI=true) and are skipped with
an instruction elsewhere: a missing tool is never silently skipped in CI.
"""

from __future__ import annotations

import contextlib
import os
import signal
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from devfleet.cluster_access import ClusterAccess, RunningFleet
from devfleet.fleet import Fleet, fleet_home
from devfleet.fleet_spec import load_fleet_spec
from devfleet.operators.catalog import OPERATORS, tools_of
from devfleet.toolchain import missing_binaries

TESTS_DIR = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark tests by tier from their folder, so `-m` selections work without boilerplate;
    leave out the `real_node` tests unless the `-m` expression names them."""
    for item in items:
        path = Path(str(item.fspath))
        if TESTS_DIR / "integration" in path.parents:
            item.add_marker(pytest.mark.integration)
        elif TESTS_DIR / "e2e" in path.parents:
            item.add_marker(pytest.mark.e2e)
    _deselect_real_node_unless_asked(config, items)


def _deselect_real_node_unless_asked(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A real node needs the opt-in kubelet tool and containerd (docs/install.md §7), which
    CI's default tool set leaves out for time: `make test` does not run these tests;
    `make real-node-test` (`-m real_node`) does."""
    if "real_node" in (config.getoption("markexpr", "") or ""):
        return
    skipped = [item for item in items if item.get_closest_marker("real_node")]
    if skipped:
        config.hook.pytest_deselected(items=skipped)
        items[:] = [item for item in items if not item.get_closest_marker("real_node")]


def _remove_fleets_of_dead_sessions() -> None:
    fleets = fleet_home() / "fleets"
    if not fleets.exists():
        return
    for directory in fleets.glob("test-*"):
        pid = directory.name.split("-")[1]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            Fleet(directory.name).down(progress=lambda _: None)


def _require_tools(*, operators: bool) -> None:
    extra = tools_of(OPERATORS.values()) if operators else []
    missing = missing_binaries(["kubernetes", "etcd", "kwok", *extra])
    if not missing:
        return
    message = "fleet tools not built (" + ", ".join(missing) + "); run `make tools`"
    if os.environ.get("CI"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def session_fleet(request: pytest.FixtureRequest) -> Iterator[RunningFleet]:
    existing = os.environ.get("FLEETQ_TEST_FLEET")
    if existing:
        yield Fleet(existing).access()
        return
    needs_full = any(item.get_closest_marker("e2e") for item in request.session.items)
    _require_tools(operators=needs_full)
    _remove_fleets_of_dead_sessions()
    fleet = Fleet(f"test-{os.getpid()}")
    previous = signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    try:
        spec = load_fleet_spec().with_worker_count(2)
        # The manager stays API-only even in a full fleet: nothing runs pods there in our
        # tests (MultiKueue keeps jobs away from it), and integration tests that play the
        # job controller by writing Job status must not race a real one. A full fleet runs
        # every operator of devfleet.operators.catalog on every cluster (those meant for
        # API-only clusters on the manager too: they leave jobs managed by MultiKueue alone).
        yield fleet.up(
            spec,
            lite=not needs_full,
            progress=_log,
            api_only=frozenset({"manager"}),
            operators=None if needs_full else (),
        )
    finally:
        fleet.down(progress=_log)
        signal.signal(signal.SIGTERM, previous)


def _raise_keyboard_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _log(line: str) -> None:
    print(line, flush=True)


@pytest.fixture(scope="session")
def lite_fleet(session_fleet: RunningFleet) -> RunningFleet:
    """Real apiservers (manager + 2 workers); a full fleet serves too."""
    return session_fleet


@pytest.fixture(scope="session")
def full_fleet(session_fleet: RunningFleet) -> RunningFleet:
    """The fleet with scheduler, controller-manager and kwok nodes on every cluster."""
    if session_fleet.lite:
        pytest.fail("this test needs the full fleet but the session fleet is lite", pytrace=False)
    return session_fleet


NamespaceFactory = Callable[..., str]


@pytest.fixture
def namespace_factory(session_fleet: RunningFleet) -> Iterator[NamespaceFactory]:
    """Create uniquely named namespaces on chosen clusters; all are deleted after the test."""
    from kubernetes import client

    created: list[tuple[ClusterAccess, str]] = []

    def create(
        prefix: str = "t",
        clusters: tuple[ClusterAccess, ...] | None = None,
        labels: dict[str, str] | None = None,
    ) -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        for member in clusters or session_fleet.all:
            with member.api_client() as api_client:
                client.CoreV1Api(api_client).create_namespace(
                    {"metadata": {"name": name, "labels": labels or {}}}
                )
            created.append((member, name))
        return name

    yield create
    for member, name in created:
        # Best effort: whatever is left goes away with the session's fleet.
        with contextlib.suppress(Exception), member.api_client() as api_client:
            client.CoreV1Api(api_client).delete_namespace(name)


@pytest.fixture
def namespace(namespace_factory: NamespaceFactory) -> str:
    """A fresh namespace, present on every cluster of the fleet."""
    return namespace_factory()

"""Two candidates on one Lease: exactly one leads; the other takes over when it stops."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import pytest

from core.kube.client import KubeClient
from core.kube.leader_election import LeaderElectionConfig, LeaderElector
from core.kube.lease import Lease
from core.kube.resources import LEASES

pytestmark = pytest.mark.asyncio(loop_scope="session")

ClientFactory = Callable[..., Awaitable[KubeClient]]
LEASE_SECONDS = 3.0
RENEW_SECONDS = 2.0
RETRY_SECONDS = 0.5


class Candidate:
    """One replica: its elector, its run task and when it started or stopped leading."""

    def __init__(self, client: KubeClient, namespace: str, identity: str, *, release: bool) -> None:
        self.started = asyncio.Event()
        self.stopped = asyncio.Event()
        self.started_at = 0.0
        self.elector = LeaderElector(
            client,
            LeaderElectionConfig(
                namespace=namespace,
                name="fleetq-hub",
                identity=identity,
                lease_duration_seconds=LEASE_SECONDS,
                renew_deadline_seconds=RENEW_SECONDS,
                retry_period_seconds=RETRY_SECONDS,
                release_on_cancel=release,
            ),
            on_started_leading=self._lead,
            on_stopped_leading=self.stopped.set,
        )
        self.task = asyncio.create_task(self.elector.run())

    async def _lead(self) -> None:
        self.started_at = time.monotonic()
        self.started.set()
        await asyncio.Event().wait()  # lead until cancelled

    async def stop(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


async def elect(
    client_factory: ClientFactory, namespace: str, *, release: bool
) -> tuple[Candidate, Candidate]:
    a = Candidate(await client_factory(), namespace, "replica-a", release=release)
    b = Candidate(await client_factory(), namespace, "replica-b", release=release)
    async with asyncio.timeout(LEASE_SECONDS * 3):
        await asyncio.wait(
            [asyncio.ensure_future(a.started.wait()), asyncio.ensure_future(b.started.wait())],
            return_when=asyncio.FIRST_COMPLETED,
        )
    return (a, b) if a.started.is_set() else (b, a)


async def test_exactly_one_leads_and_the_standby_takes_over_after_a_crash(
    client_factory: ClientFactory, kube: KubeClient, namespace: str
) -> None:
    leader, standby = await elect(client_factory, namespace, release=False)
    try:
        # Over several renewals, one and only one of them leads.
        for _ in range(int(LEASE_SECONDS / 0.25)):
            assert leader.elector.is_leader and not standby.elector.is_leader
            assert not standby.started.is_set()
            await asyncio.sleep(0.25)
        assert standby.elector.leader == leader.elector.config.identity

        lease = await kube.get(LEASES, "fleetq-hub", namespace=namespace, into=Lease)
        assert lease.spec.holder_identity == leader.elector.config.identity
        assert lease.spec.lease_duration_seconds == 3

        # The leader dies without releasing (kill -9): the standby waits out the lease.
        crashed_at = time.monotonic()
        await leader.stop()
        assert leader.stopped.is_set()
        async with asyncio.timeout(LEASE_SECONDS + 4 * RETRY_SECONDS + 2):
            await standby.started.wait()
        takeover = standby.started_at - crashed_at
        assert takeover <= LEASE_SECONDS + 3 * RETRY_SECONDS
        assert takeover >= LEASE_SECONDS - RETRY_SECONDS - 0.25, "took over a live lease"

        lease = await kube.get(LEASES, "fleetq-hub", namespace=namespace, into=Lease)
        assert lease.spec.holder_identity == standby.elector.config.identity
        assert lease.spec.lease_transitions == 1
    finally:
        await leader.stop()
        await standby.stop()


async def test_a_leader_that_shuts_down_hands_over_at_once(
    client_factory: ClientFactory, kube: KubeClient, namespace: str
) -> None:
    leader, standby = await elect(client_factory, namespace, release=True)
    try:
        stopped_at = time.monotonic()
        await leader.stop()
        lease = await kube.get(LEASES, "fleetq-hub", namespace=namespace, into=Lease)
        assert lease.spec.holder_identity in ("", standby.elector.config.identity)
        async with asyncio.timeout(LEASE_SECONDS):
            await standby.started.wait()
        # Released: no need to wait out the lease duration, only the standby's next retry.
        assert standby.started_at - stopped_at < 2 * RETRY_SECONDS + 0.5
    finally:
        await standby.stop()
    lease = await kube.get(LEASES, "fleetq-hub", namespace=namespace, into=Lease)
    assert lease.spec.holder_identity == "", "the last leader released the lease too"

"""Async clients on the lite fleet's clusters for the core.kube integration tests.

Every test gets fresh clients (so write counters start at zero) built from the fleet's
kubeconfigs exactly as the hub builds them. Tests run in the session's event loop, the
loop these fixtures are created in.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from core.kube.client import DEFAULT_BURST, DEFAULT_QPS, KubeClient
from devfleet.cluster_access import ClusterAccess, RunningFleet

ClientFactory = Callable[..., Awaitable[KubeClient]]


@pytest.fixture
async def client_factory(lite_fleet: RunningFleet) -> AsyncIterator[ClientFactory]:
    """Make extra clients (another controller, another replica); all closed afterwards."""
    made: list[KubeClient] = []

    async def make(
        member: ClusterAccess | None = None, *, qps: float = DEFAULT_QPS, burst: int = DEFAULT_BURST
    ) -> KubeClient:
        access = member or lite_fleet.manager
        client = await KubeClient.from_kubeconfig(
            access.kubeconfig, name=access.name, qps=qps, burst=burst
        )
        made.append(client)
        return client

    yield make
    for client in made:
        await client.close()


@pytest.fixture
async def kube(client_factory: ClientFactory) -> KubeClient:
    """A client of the manager cluster."""
    return await client_factory()

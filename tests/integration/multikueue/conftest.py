"""Fixtures of the MultiKueue integration tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from core.kube.client import KubeClient
from devfleet.cluster_access import RunningFleet
from tests.integration.multikueue.dispatch_harness import Fleet


@pytest.fixture
async def mk(kueue_crds: RunningFleet, namespace: str) -> AsyncIterator[Fleet]:
    manager = await KubeClient.from_kubeconfig(
        kueue_crds.manager.kubeconfig, name=kueue_crds.manager.name, qps=200, burst=400
    )
    harness = Fleet(kueue_crds, manager, namespace)
    await harness.open_workers()
    try:
        yield harness
    finally:
        await harness.stop()
        await manager.close()

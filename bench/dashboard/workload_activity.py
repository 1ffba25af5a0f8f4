"""How busy the bench's Workloads are: every change the manager's apiserver announces.

After the Workloads are admitted the hub keeps writing for minutes (the pending ones'
QuotaReserved notes go out only when its client budget has room), so a window taken
right after admission settles is not quiet. The bench watches its namespace's Workloads,
waits until none changed for a while before it measures, and reports how many changed in
each window (the dashboard's inputs, whatever wrote them).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from core.api.registry import kind_info
from core.kube.client import KubeClient
from core.kube.informer import EventHandlers, Informer


class WorkloadActivity:
    """A running watch of one namespace's Workloads; `changes` counts every event."""

    def __init__(self, client: KubeClient, namespace: str) -> None:
        self.changes = 0
        self.last_change = time.monotonic()
        self._informer: Informer[dict[str, Any]] = Informer(
            client, kind_info("Workload"), into=dict, namespace=namespace
        )
        self._informer.add_handlers(
            EventHandlers(on_add=self._seen, on_update=self._seen_update, on_delete=self._seen)
        )
        self._task: asyncio.Task[None] | None = None

    def _seen(self, _obj: Any) -> None:
        self.changes += 1
        self.last_change = time.monotonic()

    def _seen_update(self, _old: Any, _new: Any) -> None:
        self._seen(_new)

    async def start(self) -> None:
        self._task = asyncio.create_task(self._informer.run())
        await self._informer.wait_synced(timeout_seconds=180)

    async def wait_quiet(self, quiet_s: float, timeout: float) -> float:
        """Seconds until no Workload changed for `quiet_s` (or `timeout` passed)."""
        began = time.monotonic()
        while time.monotonic() - self.last_change < quiet_s:
            if time.monotonic() - began > timeout:
                break
            await asyncio.sleep(1.0)
        return time.monotonic() - began

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

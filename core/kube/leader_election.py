"""One active replica at a time, decided by a coordination.k8s.io/v1 Lease.

A candidate tries to acquire the Lease every `retry_period`; it succeeds when nobody holds
it, the holder released it, or the holder has not renewed for `lease_duration` (as this
candidate observed). The leader renews every `retry_period`; every write is a conditional
update on the Lease's resourceVersion, so of two candidates racing for it exactly one
wins. If the leader cannot renew within `renew_deadline` (< lease_duration) it steps
down *before* anyone else may take over: its leading work is cancelled and
`on_stopped_leading` runs. On shutdown (cancellation) a leader releases the Lease so a
standby takes over at once instead of after a full lease duration.

`run()` returns when leadership is lost or the leading work ends; the caller decides
whether to exit (what the hub does, so it restarts clean) or to campaign again.
"""

from __future__ import annotations

import asyncio
import inspect
import random
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from core.api.meta import ObjectMeta
from core.kube.client import KubeClient
from core.kube.errors import AlreadyExists, Conflict, KubeError, NotFound
from core.kube.lease import (
    Lease,
    LeaseSpec,
    ObservedLease,
    held_by_other,
    next_spec,
    observe,
    released_spec,
)
from core.kube.micro_time import format_micro_time, utc_now
from core.kube.resources import LEASES


@dataclass(frozen=True, slots=True)
class LeaderElectionConfig:
    """Where the Lease lives, who we are, and the timing (client-go's defaults)."""

    namespace: str
    name: str
    identity: str
    lease_duration_seconds: float = 15.0
    renew_deadline_seconds: float = 10.0
    retry_period_seconds: float = 2.0
    release_on_cancel: bool = True

    def __post_init__(self) -> None:
        if not self.identity:
            raise ValueError("leader election needs a non-empty identity")
        if (
            not self.lease_duration_seconds
            > self.renew_deadline_seconds
            > self.retry_period_seconds
        ):
            raise ValueError("need lease_duration > renew_deadline > retry_period")


class LeaderElector:
    """Campaigns for the Lease, runs the leading work while it holds it (see module doc)."""

    def __init__(
        self,
        client: KubeClient,
        config: LeaderElectionConfig,
        *,
        on_started_leading: Callable[[], Coroutine[Any, Any, None]],
        on_stopped_leading: Callable[[], Awaitable[None] | None] | None = None,
        on_new_leader: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.client = client
        self.config = config
        self.on_started_leading = on_started_leading
        self.on_stopped_leading = on_stopped_leading
        self.on_new_leader = on_new_leader
        self.clock = clock
        self.wall_clock = wall_clock
        self.is_leader = False
        self.observed: ObservedLease | None = None
        self.log = client.log.bind(
            lease=f"{config.namespace}/{config.name}", identity=config.identity
        )

    @property
    def leader(self) -> str:
        """The holder as last observed ("" when unknown or released)."""
        return self.observed.holder if self.observed else ""

    async def run(self) -> None:
        """Campaign, then lead until the Lease is lost, the work ends, or we are cancelled."""
        try:
            await self._acquire()
            self.is_leader = True
            self.log.info("leader.started")
            async with asyncio.TaskGroup() as group:
                work = group.create_task(self.on_started_leading(), name="leading-work")
                renew = group.create_task(self._keep_renewing(), name="lease-renewal")
                work.add_done_callback(lambda _: renew.cancel())
                renew.add_done_callback(lambda _: work.cancel())
        finally:
            if self.is_leader:
                await self._step_down()

    async def _step_down(self) -> None:
        self.is_leader = False
        if self.config.release_on_cancel:
            try:
                async with asyncio.timeout(self.config.retry_period_seconds * 2):
                    await self._release()
            except (KubeError, TimeoutError) as error:
                self.log.warning("leader.release_failed", error=str(error))
        self.log.info("leader.stopped")
        if self.on_stopped_leading is not None:
            result = self.on_stopped_leading()
            if inspect.isawaitable(result):
                await result

    async def _acquire(self) -> None:
        while not await self._try_acquire_or_renew():
            await asyncio.sleep(self.config.retry_period_seconds * (1 + random.random() / 5))

    async def _keep_renewing(self) -> None:
        """Renew every retry period; return (leadership lost) after renew_deadline of failures."""
        while True:
            await asyncio.sleep(self.config.retry_period_seconds)
            deadline = self.clock() + self.config.renew_deadline_seconds
            while True:
                remaining = deadline - self.clock()
                renewed = False
                if remaining > 0:
                    try:
                        async with asyncio.timeout(remaining):
                            renewed = await self._try_acquire_or_renew()
                    except TimeoutError:
                        renewed = False
                if renewed:
                    break
                if self.clock() >= deadline:
                    self.log.warning("leader.lost", holder=self.leader)
                    return
                await asyncio.sleep(
                    min(self.config.retry_period_seconds / 2, max(0.0, deadline - self.clock()))
                )

    async def _try_acquire_or_renew(self) -> bool:
        config = self.config
        now_text = format_micro_time(self.wall_clock())
        duration = max(1, round(config.lease_duration_seconds))
        try:
            lease = await self.client.get(
                LEASES, config.name, namespace=config.namespace, into=Lease
            )
        except NotFound:
            return await self._create(now_text, duration)
        except KubeError as error:
            self.log.warning("leader.read_failed", error=str(error))
            return False
        self._observe(lease.spec)
        assert self.observed is not None
        if held_by_other(self.observed, config.identity, self.clock()):
            return False
        lease.spec = next_spec(lease.spec, config.identity, duration, now_text)
        try:
            updated = await self.client.replace(
                LEASES, config.name, lease, namespace=config.namespace, into=Lease
            )
        except Conflict:
            return False
        except KubeError as error:
            self.log.warning("leader.update_failed", error=str(error))
            return False
        self._observe(updated.spec)
        return True

    async def _create(self, now_text: str, duration: int) -> bool:
        config = self.config
        lease = Lease(
            metadata=ObjectMeta(name=config.name, namespace=config.namespace),
            spec=LeaseSpec(
                holder_identity=config.identity,
                lease_duration_seconds=duration,
                acquire_time=now_text,
                renew_time=now_text,
                lease_transitions=0,
            ),
        )
        try:
            created = await self.client.create(
                LEASES, lease, namespace=config.namespace, into=Lease
            )
        except (AlreadyExists, Conflict):
            return False
        except KubeError as error:
            self.log.warning("leader.create_failed", error=str(error))
            return False
        self._observe(created.spec)
        return True

    async def _release(self) -> None:
        config = self.config
        lease = await self.client.get(LEASES, config.name, namespace=config.namespace, into=Lease)
        if lease.spec.holder_identity != config.identity:
            return
        lease.spec = released_spec(lease.spec, format_micro_time(self.wall_clock()))
        await self.client.replace(LEASES, config.name, lease, namespace=config.namespace)
        self.log.info("leader.released")

    def _observe(self, spec: LeaseSpec) -> None:
        previous = self.observed
        self.observed = observe(previous, spec, self.clock())
        holder = self.observed.holder
        if (
            self.on_new_leader is not None
            and holder
            and (previous is None or previous.holder != holder)
        ):
            self.on_new_leader(holder)

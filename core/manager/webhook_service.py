"""The admission webhooks as one hub replica serves them, in cluster or out of it.

Every replica serves (not only the leader): the apiserver may call any of them, and the
answers only read the replica's own informer caches (`CachedJobContext` over
`DecodedLookup`s), so a follower answers exactly as the leader would.

Two ways for the apiserver to reach the replica:
- in cluster (the chart): the chart's Service-based configurations point at the hub's
  Service; the hub only keeps their `caBundle` current;
- out of cluster (dev fleet, tests): a `UrlRegistration` makes the hub listen on a host
  the apiserver can reach and register URL-based configurations itself, with the CA
  bundle it issued. Configurations it created (or that an earlier out-of-cluster hub
  left behind, recognised by `REGISTERED_BY_LABEL`) are deleted when the hub stops
  cleanly; others are never deleted. While serving it re-creates them if they vanish
  (another out-of-cluster replica stopping removes them).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import structlog

from core.api.admission_check import AdmissionCheck
from core.api.cluster_queue import ClusterQueue
from core.api.local_queue import LocalQueue
from core.kube.client import KubeClient
from core.kube.errors import AlreadyExists, Forbidden, KubeError, NotFound
from core.kube.object_meta import labels_of
from core.kube.resources import NAMESPACES
from core.manager.configuration import Configuration
from core.manager.decoded_lookup import DecodedLookup
from core.manager.informer_set import ManagerInformers
from core.manager.webhooks.cert_manager import CaBundleTarget, InternalCertManager, default_targets
from core.manager.webhooks.configurations import (
    DEFAULT_TIMEOUT_SECONDS,
    MUTATING_CONFIGURATION_NAME,
    VALIDATING_CONFIGURATION_NAME,
    UrlEndpoint,
    WebhookSettings,
)
from core.manager.webhooks.job_context import CachedJobContext, JobAdmissionSettings
from core.manager.webhooks.registration import apply_configurations
from core.manager.webhooks.runtime import WebhookRuntime
from integrations.framework.job_capabilities import (
    defaults_on_update,
    webhooks_in_managed_namespaces_only,
)
from integrations.framework.job_kind import JobResource

REGISTERED_BY_LABEL: Final = "fleetq.dev/registered-by"
REGISTERED_BY_VALUE: Final = "fleetq-hub-url"
REGISTRATION_CHECK_SECONDS: Final = 10.0


@dataclass(frozen=True, slots=True)
class UrlRegistration:
    """Out of cluster: serve on `host` and register URL-based configurations there."""

    host: str
    mutating_name: str = MUTATING_CONFIGURATION_NAME
    validating_name: str = VALIDATING_CONFIGURATION_NAME
    job_namespace_selector: Mapping[str, Any] | None = None
    """Further namespace terms for the Job webhooks (tests confine them to their own)."""
    kueue_object_selector: Mapping[str, Any] | None = None
    """An objectSelector for the kueue-object webhooks (None: every object)."""
    timeout_seconds: int = DEFAULT_TIMEOUT_SECONDS
    recheck_seconds: float = REGISTRATION_CHECK_SECONDS
    """How often a serving hub checks that its configurations still exist."""

    @property
    def targets(self) -> tuple[CaBundleTarget, ...]:
        return default_targets(self.mutating_name, self.validating_name)

    def settings(
        self,
        port: int,
        hub_namespace: str,
        ca_bundle: bytes,
        job_resources: tuple[JobResource, ...],
        *,
        managed_namespaces_only: frozenset[JobResource] = frozenset(),
        defaulted_on_update: frozenset[JobResource] = frozenset(),
        managed_jobs_namespace_selector: Mapping[str, Any] | None = None,
    ) -> WebhookSettings:
        return WebhookSettings(
            job_resources=job_resources,
            managed_namespaces_only=managed_namespaces_only,
            defaulted_on_update=defaulted_on_update,
            managed_jobs_namespace_selector=managed_jobs_namespace_selector,
            endpoint=UrlEndpoint.local(port, self.host),
            hub_namespace=hub_namespace,
            ca_bundle=ca_bundle,
            timeout_seconds=self.timeout_seconds,
            mutating_name=self.mutating_name,
            validating_name=self.validating_name,
            job_namespace_selector=self.job_namespace_selector,
            kueue_object_selector=self.kueue_object_selector,
            labels={REGISTERED_BY_LABEL: REGISTERED_BY_VALUE},
        )


def job_context_from(informers: ManagerInformers, configuration: Configuration) -> CachedJobContext:
    """The job webhooks' view of the cluster: the manager's own caches, decoded on demand."""
    return CachedJobContext(
        local_queues=DecodedLookup(informers.local_queues.store, LocalQueue),
        cluster_queues=DecodedLookup(informers.cluster_queues.store, ClusterQueue),
        admission_checks=DecodedLookup(informers.admission_checks.store, AdmissionCheck),
        namespaces=informers.namespaces.store,
        settings=JobAdmissionSettings.from_configuration(configuration),
    )


def _first_error(error: BaseException) -> BaseException:
    """The one error inside (nested) single-member exception groups, or the error itself."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


class ManagerWebhooks:
    """Serves the webhooks (and, out of cluster, registers them) while `run()` runs."""

    def __init__(
        self,
        configuration: Configuration,
        client: KubeClient,
        informers: ManagerInformers,
        *,
        port: int | None = None,
        registration: UrlRegistration | None = None,
    ) -> None:
        self._client = client
        self._namespace = configuration.namespace
        self._job_resources = tuple(kind.resource for kind in configuration.job_kinds)
        self._managed_namespaces_only = frozenset(
            kind.resource
            for kind in configuration.job_kinds
            if webhooks_in_managed_namespaces_only(kind)
        )
        self._defaulted_on_update = frozenset(
            kind.resource for kind in configuration.job_kinds if defaults_on_update(kind)
        )
        self._managed_jobs_namespace_selector = configuration.managed_jobs_namespace_selector
        self._registration = registration
        served = configuration
        if port is not None:
            served = dataclasses.replace(served, webhook_port=port)
        if registration is not None:
            served = dataclasses.replace(served, webhook_host=registration.host)
        self.runtime = WebhookRuntime(
            served,
            client,
            job_context_from(informers, configuration),
            extra_hosts=[registration.host] if registration is not None else (),
            targets=registration.targets if registration is not None else None,
        )
        self._registered = asyncio.Event()
        if registration is None:
            self._registered.set()
        self._owned: set[CaBundleTarget] = set()
        self.log = structlog.get_logger("core.manager.webhooks").bind(
            mode="url" if registration is not None else "service"
        )

    @property
    def ready(self) -> bool:
        """Serving, and (out of cluster) registered with the apiserver."""
        return self.runtime.ready.is_set() and self._registered.is_set()

    @property
    def port(self) -> int:
        return self.runtime.server.port

    async def run(self) -> None:
        """Serve until cancelled; raises the error that stopped the server otherwise."""
        try:
            if self._registration is None:
                await self.runtime.run()
                return
            await self._ensure_namespace()
            async with asyncio.TaskGroup() as group:
                group.create_task(self.runtime.run(), name="webhook-server")
                await self.runtime.ready.wait()
                await self._register(self._registration)
                group.create_task(self._keep_registered(self._registration))
        except BaseExceptionGroup as group:
            raise _first_error(group) from None
        finally:
            self._registered.clear()
            await self._unregister()

    # -- out of cluster ------------------------------------------------------------------
    async def _ensure_namespace(self) -> None:
        """The certificate Secret lives in the hub's namespace; a dev cluster may lack it.
        (Not allowed to create namespaces: the Secret write says whether it exists.)"""
        with contextlib.suppress(AlreadyExists, Forbidden):
            await self._client.create(NAMESPACES, {"metadata": {"name": self._namespace}})
            self.log.info("webhook.namespace_created", namespace=self._namespace)

    async def _register(self, registration: UrlRegistration) -> None:
        for target in registration.targets:
            if await self._ours_to_remove(target):
                self._owned.add(target)
        settings = registration.settings(
            self.port,
            self._namespace,
            self._ca_bundle(),
            self._job_resources,
            managed_namespaces_only=self._managed_namespaces_only,
            defaulted_on_update=self._defaulted_on_update,
            managed_jobs_namespace_selector=self._managed_jobs_namespace_selector,
        )
        await apply_configurations(self._client, settings)
        self._registered.set()
        self.log.info(
            "webhook.registered",
            url=settings.endpoint.client_config("")["url"],
            owned=sorted(target.name for target in self._owned),
        )

    def _ca_bundle(self) -> bytes:
        """The CAs the hub issued; empty with mounted certificates (their CA is not ours)."""
        refresher = self.runtime.refresher
        return refresher.published_ca_bundle if isinstance(refresher, InternalCertManager) else b""

    async def _ours_to_remove(self, target: CaBundleTarget) -> bool:
        """Absent (we create it) or left by an out-of-cluster hub; never a chart's."""
        try:
            existing = await self._client.get(target.resource, target.name)
        except NotFound:
            return True
        return labels_of(existing).get(REGISTERED_BY_LABEL) == REGISTERED_BY_VALUE

    async def _keep_registered(self, registration: UrlRegistration) -> None:
        while True:
            await asyncio.sleep(registration.recheck_seconds)
            try:
                missing = [
                    target
                    for target in registration.targets
                    if not await _exists(self._client, target)
                ]
                if missing:
                    self.log.warning(
                        "webhook.registration_missing", names=[t.name for t in missing]
                    )
                    await self._register(registration)
            except KubeError:
                self.log.exception("webhook.registration_check_failed")

    async def _unregister(self) -> None:
        for target in sorted(self._owned, key=lambda t: t.name):
            try:
                await asyncio.wait_for(self._client.delete(target.resource, target.name), 5)
            except NotFound:
                pass
            except (KubeError, TimeoutError):
                self.log.exception("webhook.unregister_failed", name=target.name)
            else:
                self.log.info("webhook.unregistered", name=target.name)
        self._owned.clear()


async def _exists(client: KubeClient, target: CaBundleTarget) -> bool:
    try:
        await client.get(target.resource, target.name)
    except NotFound:
        return False
    return True

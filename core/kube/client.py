"""One async client per cluster: raw REST verbs over aiohttp, bytes in and out.

Guarantees:
- every call carries a timeout and a token from the cluster's rate budget (`TokenBucket`),
  so no cluster can be flooded and no call can hang a loop;
- every write is counted by verb and resource (`WriteCounter`), also when it fails;
- bodies go out as JSON bytes (typed structs via msgspec, dicts via orjson) and come back
  decoded with msgspec into the type asked for, or into plain dicts;
- an answer the apiserver marks "try again after N seconds" (429, or 5xx with Retry-After)
  is retried after that wait, up to `MAX_RETRY_AFTER_ATTEMPTS` times (as client-go does)
  and never past the call's own timeout;
- failures raise typed errors from core.kube.errors (`NotFound`, `Conflict`, `Invalid`...
  carrying the apiserver's message) or `TransportError` when no answer arrived.
Any resource is reachable given group/version/plural (see core.kube.resources); the
client holds no per-kind code and no generated models.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import enum
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, TypeVar, overload

import aiohttp
import structlog
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    stop_after_delay,
)

from core.kube.body_codec import Body, ListPage, decode_body, encode_body, page_type
from core.kube.cluster_config import ClusterConfig, KubeconfigPolicy, from_kubeconfig
from core.kube.errors import ApiError, TooManyRequests, TransportError, error_from_response
from core.kube.object_meta import namespace_of
from core.kube.rate_limit import TokenBucket
from core.kube.resources import ResourceRef, collection_path, object_path, resource_label
from core.kube.write_counter import WriteCounter, WriteVerb

T = TypeVar("T")

USER_AGENT = "fleetq/0.1"
DEFAULT_QPS = 50.0
DEFAULT_BURST = 100
DEFAULT_TIMEOUT_SECONDS = 30.0
DEFAULT_CONNECT_TIMEOUT_SECONDS = 10.0
LIST_PAGE_SIZE = 500
# client-go's default: ten tries of an answer that names its own Retry-After.
MAX_RETRY_AFTER_ATTEMPTS = 10
# A Retry-After longer than this is waited for only this long before the next try.
MAX_RETRY_AFTER_SECONDS = 30.0


class PatchType(enum.StrEnum):
    """Patch flavours the apiserver accepts, by their content type."""

    JSON = "application/json-patch+json"
    MERGE = "application/merge-patch+json"
    STRATEGIC = "application/strategic-merge-patch+json"
    APPLY = "application/apply-patch+yaml"


class KubeClient:
    """REST access to one cluster. Create inside a running loop; `close()` when done."""

    def __init__(
        self,
        config: ClusterConfig,
        *,
        qps: float = DEFAULT_QPS,
        burst: int = DEFAULT_BURST,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        connect_timeout_seconds: float = DEFAULT_CONNECT_TIMEOUT_SECONDS,
        max_connections: int = 100,
    ) -> None:
        self.config = config
        self.name = config.name
        self.rate_limiter = TokenBucket(qps, burst)
        self.writes = WriteCounter()
        # Answers retried after their Retry-After (429s of priority and fairness, mostly).
        self.retried_after = 0
        self.timeout_seconds = timeout_seconds
        self.connect_timeout_seconds = connect_timeout_seconds
        self.log = structlog.get_logger("core.kube").bind(cluster=config.name)
        connector = aiohttp.TCPConnector(
            ssl=config.ssl_context if config.ssl_context is not None else False,
            limit=max_connections,
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            headers={"User-Agent": USER_AGENT, "Accept": "application/json"},
            timeout=aiohttp.ClientTimeout(total=None, connect=connect_timeout_seconds),
            raise_for_status=False,
        )

    @classmethod
    async def from_kubeconfig(
        cls,
        source: Path | str | Mapping[str, Any],
        *,
        context: str | None = None,
        name: str | None = None,
        policy: KubeconfigPolicy | None = None,
        qps: float = DEFAULT_QPS,
        burst: int = DEFAULT_BURST,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    ) -> KubeClient:
        config = await from_kubeconfig(source, context=context, name=name, policy=policy)
        return cls(config, qps=qps, burst=burst, timeout_seconds=timeout_seconds)

    async def close(self) -> None:
        await self._session.close()

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    # -- transport ---------------------------------------------------------------------

    async def _headers(self, content_type: str | None) -> dict[str, str]:
        headers: dict[str, str] = {}
        authorization = await self.config.credentials.authorization()
        if authorization:
            headers["Authorization"] = authorization
        if content_type:
            headers["Content-Type"] = content_type
        return headers

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: Body | None = None,
        content_type: str = "application/json",
        timeout_seconds: float | None = None,
        write: tuple[WriteVerb, str] | None = None,
    ) -> bytes:
        """Send one request and return the response body; error statuses raise.

        An answer that names its own Retry-After (priority and fairness throttling, a
        storage re-initialising) is tried again after that wait: the apiserver did not
        act on it, so this is safe for writes too.
        """
        data = None if body is None else encode_body(body)
        retrying = AsyncRetrying(
            retry=retry_if_exception(_asks_to_retry),
            wait=_retry_after_wait,
            # Never longer in all than one call may take: a caller's deadline still holds.
            stop=stop_after_attempt(MAX_RETRY_AFTER_ATTEMPTS)
            | stop_after_delay(timeout_seconds or self.timeout_seconds),
            reraise=True,
            before_sleep=self._log_retry_after,
        )
        async for attempt in retrying:
            with attempt:
                return await self._request_once(
                    method,
                    path,
                    query=query,
                    data=data,
                    content_type=content_type,
                    timeout_seconds=timeout_seconds,
                    write=write,
                )
        raise AssertionError("unreachable: tenacity re-raises the last failure")

    def _log_retry_after(self, state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        self.retried_after += 1
        self.log.info(
            "kube.retry_after",
            attempt=state.attempt_number,
            wait_seconds=round(state.upcoming_sleep, 3),
            error=str(error),
        )

    async def _request_once(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None,
        data: bytes | None,
        content_type: str,
        timeout_seconds: float | None,
        write: tuple[WriteVerb, str] | None,
    ) -> bytes:
        await self.rate_limiter.acquire()
        headers = await self._headers(content_type if data is not None else None)
        failed = True
        try:
            async with asyncio.timeout(timeout_seconds or self.timeout_seconds):
                async with self._session.request(
                    method,
                    self.config.server + path,
                    params=query,
                    data=data,
                    headers=headers,
                    server_hostname=self.config.tls_server_name,
                    proxy=self.config.proxy,
                ) as response:
                    payload = await response.read()
                    status = response.status
                    retry_after = response.headers.get("Retry-After")
        except (aiohttp.ClientError, OSError, TimeoutError) as error:
            raise TransportError(
                f"{self.name}: {method} {path}: {type(error).__name__}: {error}"
            ) from error
        else:
            failed = status >= 400
        finally:
            if write is not None:
                self.writes.record(write[0], write[1], failed=failed)
        if status >= 400:
            raise error_from_response(
                status, payload, method=method, path=path, retry_after=retry_after
            )
        return payload

    @contextlib.asynccontextmanager
    async def stream(
        self,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        read_timeout_seconds: float,
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        """Open a long-lived GET (watch, logs). A read stalled beyond the timeout raises.

        Errors while connecting raise typed errors; errors while reading the body surface
        as aiohttp/timeout errors to the reader, which knows whether to reconnect.
        """
        await self.rate_limiter.acquire()
        headers = await self._headers(None)
        timeout = aiohttp.ClientTimeout(
            total=None, connect=self.connect_timeout_seconds, sock_read=read_timeout_seconds
        )
        try:
            response = await self._session.get(
                self.config.server + path,
                params=query,
                headers=headers,
                timeout=timeout,
                server_hostname=self.config.tls_server_name,
                proxy=self.config.proxy,
            )
        except (aiohttp.ClientError, OSError, TimeoutError) as error:
            raise TransportError(
                f"{self.name}: GET {path}: {type(error).__name__}: {error}"
            ) from error
        try:
            if response.status >= 400:
                payload = await response.read()
                raise error_from_response(response.status, payload, method="GET", path=path)
            yield response
        finally:
            response.release()

    # -- verbs -------------------------------------------------------------------------

    @overload
    async def get(
        self,
        resource: ResourceRef,
        name: str,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> dict[str, Any]: ...
    @overload
    async def get(
        self,
        resource: ResourceRef,
        name: str,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        into: type[T],
    ) -> T: ...
    async def get(
        self,
        resource: ResourceRef,
        name: str,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        into: type[Any] = dict,
    ) -> Any:
        """Read one object (from the apiserver: use an informer for repeated reads)."""
        payload = await self.request("GET", object_path(resource, name, namespace, subresource))
        return decode_body(payload, into)

    @overload
    async def list(
        self,
        resource: ResourceRef,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        resource_version: str | None = None,
    ) -> ListPage[dict[str, Any]]: ...
    @overload
    async def list(
        self,
        resource: ResourceRef,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        resource_version: str | None = None,
        into: type[T],
    ) -> ListPage[T]: ...
    async def list(
        self,
        resource: ResourceRef,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        resource_version: str | None = None,
        into: type[Any] = dict,
    ) -> ListPage[Any]:
        """One page of a list; `metadata.continue_token` says whether more follow."""
        query = _selectors(label_selector, field_selector)
        if limit:
            query["limit"] = str(limit)
        if continue_token:
            query["continue"] = continue_token
        if resource_version is not None:
            query["resourceVersion"] = resource_version
        payload = await self.request("GET", collection_path(resource, namespace), query=query)
        return decode_body(payload, page_type(into))

    async def list_all(
        self,
        resource: ResourceRef,
        *,
        into: type[T],
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = LIST_PAGE_SIZE,
    ) -> tuple[builtins.list[T], str]:
        """Every object (following continue tokens) and the list's resourceVersion.

        A continue token that expires midway raises `Gone`; the caller lists again.
        """
        items: builtins.list[T] = []
        token: str | None = None
        while True:
            page = await self.list(
                resource,
                namespace=namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                limit=page_size,
                continue_token=token,
                into=into,
            )
            items.extend(page.items)
            token = page.metadata.continue_token
            if not token:
                return items, page.metadata.resource_version

    @overload
    async def create(
        self,
        resource: ResourceRef,
        body: Body,
        *,
        namespace: str | None = None,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]: ...
    @overload
    async def create(
        self,
        resource: ResourceRef,
        body: Body,
        *,
        namespace: str | None = None,
        field_manager: str | None = None,
        dry_run: bool = False,
        into: type[T],
    ) -> T: ...
    async def create(
        self,
        resource: ResourceRef,
        body: Body,
        *,
        namespace: str | None = None,
        field_manager: str | None = None,
        dry_run: bool = False,
        into: type[Any] = dict,
    ) -> Any:
        """Create an object; its namespace defaults to the body's metadata.namespace."""
        namespace = namespace or _body_namespace(body)
        query = _write_query(field_manager, dry_run)
        payload = await self.request(
            "POST",
            collection_path(resource, namespace),
            query=query,
            body=body,
            write=(WriteVerb.CREATE, resource_label(resource)),
        )
        return decode_body(payload, into)

    @overload
    async def replace(
        self,
        resource: ResourceRef,
        name: str,
        body: Body,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        field_manager: str | None = None,
    ) -> dict[str, Any]: ...
    @overload
    async def replace(
        self,
        resource: ResourceRef,
        name: str,
        body: Body,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        field_manager: str | None = None,
        into: type[T],
    ) -> T: ...
    async def replace(
        self,
        resource: ResourceRef,
        name: str,
        body: Body,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        field_manager: str | None = None,
        into: type[Any] = dict,
    ) -> Any:
        """PUT the whole object; a metadata.resourceVersion in the body makes it conditional."""
        namespace = namespace or _body_namespace(body)
        payload = await self.request(
            "PUT",
            object_path(resource, name, namespace, subresource),
            query=_write_query(field_manager, False),
            body=body,
            write=(WriteVerb.UPDATE, _label(resource, subresource)),
        )
        return decode_body(payload, into)

    @overload
    async def patch(
        self,
        resource: ResourceRef,
        name: str,
        body: Body,
        *,
        patch_type: PatchType = PatchType.MERGE,
        namespace: str | None = None,
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool | None = None,
    ) -> dict[str, Any]: ...
    @overload
    async def patch(
        self,
        resource: ResourceRef,
        name: str,
        body: Body,
        *,
        patch_type: PatchType = PatchType.MERGE,
        namespace: str | None = None,
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool | None = None,
        into: type[T],
    ) -> T: ...
    async def patch(
        self,
        resource: ResourceRef,
        name: str,
        body: Body,
        *,
        patch_type: PatchType = PatchType.MERGE,
        namespace: str | None = None,
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool | None = None,
        into: type[Any] = dict,
    ) -> Any:
        """Patch an object. Server-side apply (`PatchType.APPLY`) needs a field manager."""
        if patch_type is PatchType.APPLY and not field_manager:
            raise ValueError("server-side apply needs a field_manager")
        query = _write_query(field_manager, False)
        if force is not None:
            query["force"] = "true" if force else "false"
        verb = WriteVerb.APPLY if patch_type is PatchType.APPLY else WriteVerb.PATCH
        payload = await self.request(
            "PATCH",
            object_path(resource, name, namespace, subresource),
            query=query,
            body=body,
            content_type=patch_type.value,
            write=(verb, _label(resource, subresource)),
        )
        return decode_body(payload, into)

    @overload
    async def apply(
        self,
        resource: ResourceRef,
        name: str,
        body: Body,
        *,
        field_manager: str,
        namespace: str | None = None,
        subresource: str | None = None,
        force: bool = True,
    ) -> dict[str, Any]: ...
    @overload
    async def apply(
        self,
        resource: ResourceRef,
        name: str,
        body: Body,
        *,
        field_manager: str,
        namespace: str | None = None,
        subresource: str | None = None,
        force: bool = True,
        into: type[T],
    ) -> T: ...
    async def apply(
        self,
        resource: ResourceRef,
        name: str,
        body: Body,
        *,
        field_manager: str,
        namespace: str | None = None,
        subresource: str | None = None,
        force: bool = True,
        into: type[Any] = dict,
    ) -> Any:
        """Server-side apply: `field_manager` owns exactly the fields present in `body`."""
        return await self.patch(
            resource,
            name,
            body,
            patch_type=PatchType.APPLY,
            namespace=namespace or _body_namespace(body),
            subresource=subresource,
            field_manager=field_manager,
            force=force,
            into=into,
        )

    async def delete(
        self,
        resource: ResourceRef,
        name: str,
        *,
        namespace: str | None = None,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
        precondition_resource_version: str | None = None,
        precondition_uid: str | None = None,
    ) -> dict[str, Any]:
        """Delete an object; returns the object (if finalizers keep it) or a Status."""
        options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation_policy:
            options["propagationPolicy"] = propagation_policy
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        preconditions = {
            key: value
            for key, value in (
                ("resourceVersion", precondition_resource_version),
                ("uid", precondition_uid),
            )
            if value
        }
        if preconditions:
            options["preconditions"] = preconditions
        payload = await self.request(
            "DELETE",
            object_path(resource, name, namespace),
            body=options,
            write=(WriteVerb.DELETE, resource_label(resource)),
        )
        return decode_body(payload, dict)


def _label(resource: ResourceRef, subresource: str | None) -> str:
    label = resource_label(resource)
    return f"{label}/{subresource}" if subresource else label


def _selectors(label_selector: str | None, field_selector: str | None) -> dict[str, str]:
    query: dict[str, str] = {}
    if label_selector:
        query["labelSelector"] = label_selector
    if field_selector:
        query["fieldSelector"] = field_selector
    return query


def _write_query(field_manager: str | None, dry_run: bool) -> dict[str, str]:
    query: dict[str, str] = {}
    if field_manager:
        query["fieldManager"] = field_manager
    if dry_run:
        query["dryRun"] = "All"
    return query


def _body_namespace(body: Body) -> str | None:
    if isinstance(body, bytes | list | tuple):
        return None
    try:
        return namespace_of(body) or None
    except AttributeError:
        return None


def _asks_to_retry(error: BaseException) -> bool:
    """client-go's rule: a 429, or a 5xx, that names how long to wait before trying again."""
    if not isinstance(error, ApiError) or error.retry_after_seconds is None:
        return False
    return isinstance(error, TooManyRequests) or error.status >= 500


def _retry_after_wait(state: RetryCallState) -> float:
    error = state.outcome.exception() if state.outcome is not None else None
    seconds = error.retry_after_seconds if isinstance(error, ApiError) else None
    return min(MAX_RETRY_AFTER_SECONDS, seconds or 0.0)

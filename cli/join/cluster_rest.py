"""Plain REST against one cluster, with errors a user can act on.

join needs only a handful of calls (get, server-side apply, create a subresource, access
reviews), so it talks JSON over the `kubernetes` client's authenticated connection instead
of generated models. Every failure becomes one of two errors: `Unreachable` (no HTTP answer:
the message names the cluster, context, server and network error) or `ApiCallError` (an HTTP
error: the message names the verb, the resource and what the apiserver said).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from cli.join.kube_contexts import ClusterEndpoint
from core.manager.field_manager import JOIN_FIELD_MANAGER

DEFAULT_TIMEOUT = (5.0, 30.0)
"""(connect, read) seconds: an unreachable cluster fails fast, a slow one is waited for."""

_VERBS = {"GET": "get", "PATCH": "patch", "POST": "create", "DELETE": "delete", "PUT": "update"}


class ClusterCallError(Exception):
    """A call to a cluster failed; the message is complete and meant for the user."""


class Unreachable(ClusterCallError):
    def __init__(self, endpoint: ClusterEndpoint, detail: str) -> None:
        self.endpoint = endpoint
        super().__init__(
            f"{endpoint.label}: cannot reach the API server {endpoint.server} "
            f"(context {endpoint.context!r}): {detail}"
        )


class ApiCallError(ClusterCallError):
    def __init__(
        self, endpoint: ClusterEndpoint, method: str, path: str, status: int, body: Any
    ) -> None:
        self.status = status
        self.body = body if isinstance(body, Mapping) else {}
        self.reason = str(self.body.get("reason", ""))
        self.server_message = str(self.body.get("message", "") or body or "")
        verb = _VERBS.get(method, method.lower())
        super().__init__(
            f"{endpoint.label}: {verb} {path} failed (HTTP {status} {self.reason}): "
            f"{self.server_message}"
        )


class ClusterRest:
    """JSON calls on one cluster; owns its `kubernetes` ApiClient (close it when done)."""

    def __init__(
        self, endpoint: ClusterEndpoint, *, timeout: tuple[float, float] = DEFAULT_TIMEOUT
    ) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self._client = endpoint.api_client()
        # A dead server should fail after one connection attempt, not urllib3's three.
        self._client.rest_client.pool_manager.connection_pool_kw["retries"] = False

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: Mapping[str, str] | None = None,
        content_type: str = "application/json",
    ) -> dict[str, Any]:
        from kubernetes.client.exceptions import ApiException

        headers = {"Accept": "application/json", "Content-Type": content_type}
        _, url, headers, serialized, _ = self._client.param_serialize(
            method,
            path,
            query_params=list((query or {}).items()),
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        try:
            response = self._client.call_api(
                method, url, header_params=headers, body=serialized, _request_timeout=self.timeout
            )
            status, raw = response.status, response.read()
        except ApiException as error:
            status, raw = int(error.status or 0), error.body
        except Exception as error:  # urllib3/ssl/socket errors: no HTTP answer at all
            raise Unreachable(self.endpoint, _network_detail(error)) from None
        decoded = _decode(raw)
        if status >= 400:
            raise ApiCallError(self.endpoint, method, path, status, decoded)
        return decoded if isinstance(decoded, dict) else {}

    def get(self, path: str) -> dict[str, Any] | None:
        """The object, or None when it does not exist."""
        try:
            return self.request("GET", path)
        except ApiCallError as error:
            if error.status == 404:
                return None
            raise

    def apply(self, path: str, manifest: Mapping[str, Any], *, dry_run: bool) -> dict[str, Any]:
        """Server-side apply as `fleetq-join`, taking over fields another manager set."""
        query = {"fieldManager": JOIN_FIELD_MANAGER, "force": "true"}
        if dry_run:
            query["dryRun"] = "All"
        return self.request(
            "PATCH", path, dict(manifest), query=query, content_type="application/apply-patch+yaml"
        )

    def create(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return self.request("POST", path, dict(body))

    def server_version(self) -> str:
        """The apiserver's version; raises Unreachable when it does not answer."""
        version = self.request("GET", "/version")
        return str(version.get("gitVersion", "?"))

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> ClusterRest:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _decode(raw: Any) -> Any:
    if not raw:
        return {}
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)


def _network_detail(error: Exception) -> str:
    """The innermost reason (connection refused, name not known, certificate verify failed)."""
    reason = getattr(error, "reason", None)
    while reason is not None and getattr(reason, "reason", None) is not None:
        reason = reason.reason
    detail = str(reason or error)
    return detail.split(": ", 1)[-1] if "object at 0x" in detail else detail

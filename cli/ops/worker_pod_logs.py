"""Read a job's pod logs on the worker that runs it, through that worker's apiserver.

The apiserver serves `pods/{name}/log` by asking the node's kubelet (or kwok's stand-in);
the CLI only talks to the apiserver, with the worker kubeconfig the hub uses. Lines are
yielded as they arrive, so `-f` streams; a pod whose logs cannot be read yields one
`LogReadError` carrying the apiserver's own message (for example that the pod has no
node yet), and the other pods go on.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from cli.join.cluster_rest import ApiCallError, ClusterCallError, ClusterRest
from cli.join.kube_contexts import ClusterEndpoint
from cli.ops.ops_errors import OpsError

"""Labels the Job controller puts on its pods (the second for older clusters)."""
CONNECT_TIMEOUT = 5.0
PERMISSION_HINT = (
    "the worker's kubeconfig Secret (the hub's identity there) must allow get/list on pods "
    "and get on pods/log for `fleetq logs`"
)
READ_TIMEOUT = 60.0
"""Without -f: how long one pod's log may take to arrive."""


class LogReadError(Exception):
    """One pod's logs could not be read; the message is the apiserver's or the network's."""


@dataclass(frozen=True, slots=True)
class LogSource:
    pod: str
    container: str
    single_container: bool
    node: str
    """Empty while the pod is not scheduled: the apiserver then answers with no log at all."""

    @property
    def prefix(self) -> str:
        return f"[{self.pod}]" if self.single_container else f"[{self.pod}/{self.container}]"


def job_pods(
    rest: ClusterRest, namespace: str, job: str, name_labels: Sequence[str]
) -> list[dict[str, Any]]:
    """The job's pods on the worker (found by its kind's `name_labels`), oldest first."""
    for label in name_labels:
        pods = selected_pods(rest, namespace, f"{label}={job}")
        if pods:
            return pods
    return []


def selected_pods(rest: ClusterRest, namespace: str, selector: str) -> list[dict[str, Any]]:
    """The pods a label selector picks in `namespace` on the worker, oldest first."""
    try:
        answer = rest.request(
            "GET", f"/api/v1/namespaces/{namespace}/pods", query={"labelSelector": selector}
        )
    except ApiCallError as error:
        hint = f"; {PERMISSION_HINT}" if error.status == 403 else ""
        raise OpsError(f"{error}{hint}") from None
    except ClusterCallError as error:
        raise OpsError(str(error)) from None
    return sorted(
        answer.get("items") or [],
        key=lambda pod: (
            (pod.get("metadata") or {}).get("creationTimestamp") or "",
            (pod.get("metadata") or {}).get("name") or "",
        ),
    )


def log_sources(pods: list[dict[str, Any]], container: str | None) -> list[LogSource]:
    """Every (pod, container) to read; with `container`, only that one (pods lacking it skipped)."""
    sources: list[LogSource] = []
    for pod in pods:
        name = str((pod.get("metadata") or {}).get("name") or "")
        spec = pod.get("spec") or {}
        node = str(spec.get("nodeName") or "")
        containers = [str(c.get("name")) for c in spec.get("containers") or []]
        chosen = [container] if container else containers
        for item in chosen:
            if item in containers:
                sources.append(LogSource(name, item, len(chosen) == 1, node))
    return sources


class PodLogReader:
    """Streams pod logs from one worker's apiserver; owns its client (close it when done)."""

    def __init__(self, endpoint: ClusterEndpoint, namespace: str, *, follow: bool) -> None:
        self.endpoint = endpoint
        self.namespace = namespace
        self.follow = follow
        self._client = endpoint.api_client()
        self._client.rest_client.pool_manager.connection_pool_kw["retries"] = False

    def lines(self, source: LogSource) -> Iterator[str]:
        """The container's log lines (without newlines); LogReadError when refused."""
        query = {"container": source.container}
        if self.follow:
            query["follow"] = "true"
        path = f"/api/v1/namespaces/{self.namespace}/pods/{source.pod}/log"
        url = f"{self._client.configuration.host}{path}?{urllib.parse.urlencode(query)}"
        headers: dict[str, str] = {}
        self._client.update_params_for_auth(headers, [], ["BearerToken"], path, "GET", None)
        timeout = (CONNECT_TIMEOUT, None if self.follow else READ_TIMEOUT)
        try:
            response = self._client.rest_client.request(
                "GET", url, headers=headers, _request_timeout=timeout
            )
        except Exception as error:  # no HTTP answer at all
            raise LogReadError(f"{self.endpoint.label}: {error}") from None
        raw = response.response
        if response.status >= 400:
            message = _server_message(raw.read(), response.status)
            hint = f"; {PERMISSION_HINT}" if response.status == 403 else ""
            raise LogReadError(message + hint)
        pending = b""
        try:
            for chunk in raw.stream(4096):
                pending += chunk
                *complete, pending = pending.split(b"\n")
                for line in complete:
                    yield line.decode(errors="replace")
            if pending:
                yield pending.decode(errors="replace")
        finally:
            raw.release_conn()

    def close(self) -> None:
        self._client.close()


def _server_message(body: bytes, status: int) -> str:
    try:
        decoded = json.loads(body)
    except ValueError:
        return f"HTTP {status}: {body.decode(errors='replace').strip()}"
    if isinstance(decoded, dict):
        return f"HTTP {status} {decoded.get('reason', '')}: {decoded.get('message', '')}"
    return f"HTTP {status}: {decoded}"

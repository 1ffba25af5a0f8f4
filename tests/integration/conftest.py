"""Integration fixtures: fleetq's CRDs installed on every cluster of the lite fleet.

`kueue_crds` applies the committed chart CRDs (hub chart on the manager, worker chart on
the workers) with server-side apply, the way helm-free installs do, and waits until the
apiservers report them Established. `kube_rest` gives tests plain REST access, so they see
exactly what the apiserver answers (status codes and messages) with no client model in
between.
"""

from __future__ import annotations

import json
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from devfleet.cluster_access import ClusterAccess, RunningFleet

REPO = Path(__file__).resolve().parents[2]
HUB_CRDS = REPO / "charts" / "fleetq-hub" / "crds"
WORKER_CRDS = REPO / "charts" / "fleetq-worker" / "crds"
FIELD_MANAGER = "fleetq-tests"
ESTABLISH_TIMEOUT_SECONDS = 60.0


class KubeError(Exception):
    """The apiserver answered with an error status."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        self.status = status
        self.body = body
        super().__init__(f"HTTP {status}: {body.get('message', body)}")

    @property
    def message(self) -> str:
        return str(self.body.get("message", ""))


@dataclass
class KubeRest:
    """Plain REST calls against one cluster; errors raise KubeError with the server's message."""

    Error: ClassVar[type[KubeError]] = KubeError  # tests cannot import conftest modules

    access: ClusterAccess
    _client: Any = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._client = self.access.api_client()

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        query: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        url = self._client.configuration.host + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        headers = {"Accept": "application/json", "Content-Type": content_type}
        # The client serialises JSON bodies itself; other types (apply YAML) go as text.
        is_json = content_type.endswith("json")
        payload = body if body is None or is_json else json.dumps(body)
        from kubernetes.client.exceptions import ApiException

        try:
            response = self._client.rest_client.request(
                method, url, headers=headers, body=payload, _request_timeout=30
            )
            status, raw = response.status, response.read()
        except ApiException as error:
            status, raw = error.status, error.body
        decoded = json.loads(raw) if raw else {}
        if status >= 400:
            raise KubeError(status, decoded)
        return decoded

    def apply(self, path: str, body: dict[str, Any], *, subresource: str = "") -> dict[str, Any]:
        """Server-side apply of `body` at `path` (the object's own URL)."""
        return self.request(
            "PATCH",
            path + (f"/{subresource}" if subresource else ""),
            body,
            content_type="application/apply-patch+yaml",
            query={"fieldManager": FIELD_MANAGER, "force": "true"},
        )

    def get(self, path: str) -> dict[str, Any]:
        return self.request("GET", path)

    def delete(self, path: str) -> None:
        try:
            self.request("DELETE", path)
        except KubeError as error:
            if error.status != 404:
                raise

    def close(self) -> None:
        self._client.close()


def crd_manifests(directory: Path) -> list[dict[str, Any]]:
    return [yaml.safe_load(path.read_text()) for path in sorted(directory.glob("*.yaml"))]


def _crd_path(name: str) -> str:
    return f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"


def _wait_established(rest: KubeRest, names: list[str]) -> None:
    deadline = time.monotonic() + ESTABLISH_TIMEOUT_SECONDS
    pending = set(names)
    while pending:
        for name in sorted(pending):
            # Right after an apply, status (or its conditions) can still be null.
            status = rest.get(_crd_path(name)).get("status") or {}
            conditions = status.get("conditions") or []
            if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                pending.discard(name)
        if pending and time.monotonic() > deadline:
            raise TimeoutError(f"{rest.access.name}: CRDs not Established: {sorted(pending)}")
        if pending:
            time.sleep(0.2)


@pytest.fixture(scope="session")
def kube_rest(lite_fleet: RunningFleet) -> Iterator[dict[str, KubeRest]]:
    """A REST client per cluster of the fleet, by cluster name."""
    clients = {member.name: KubeRest(member) for member in lite_fleet.all}
    yield clients
    for rest in clients.values():
        rest.close()


@pytest.fixture(scope="session")
def kueue_crds(lite_fleet: RunningFleet, kube_rest: dict[str, KubeRest]) -> RunningFleet:
    """fleetq's CRDs applied and Established on the manager and every worker."""
    for member in lite_fleet.all:
        directory = HUB_CRDS if member is lite_fleet.manager else WORKER_CRDS
        rest = kube_rest[member.name]
        manifests = crd_manifests(directory)
        for manifest in manifests:
            rest.apply(_crd_path(manifest["metadata"]["name"]), manifest)
        _wait_established(rest, [manifest["metadata"]["name"] for manifest in manifests])
    return lite_fleet

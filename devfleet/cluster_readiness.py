"""Make a fresh cluster usable and wait until it really is.

"The apiserver answers" is not enough for a job to run: pods need the `default`
ServiceAccount (made by the controller-manager) and Ready nodes (made Ready by kwok). So a
full cluster is ready when its nodes are all Ready and that ServiceAccount exists; a lite
cluster (etcd + apiserver only) when `/readyz` says so.
"""

from __future__ import annotations

import time
from typing import Any

from devfleet.cluster_access import ClusterAccess
from devfleet.fleet_spec import ClusterSpec, node_manifests


class ClusterNotReady(RuntimeError):
    """A cluster did not become ready in time; the message says what was missing."""


def install_nodes(member: ClusterAccess, spec: ClusterSpec) -> None:
    """Create the cluster's kwok nodes (idempotent), with capacity in their status."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    _wait_apiserver(member, timeout=120)
    with member.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        for node in node_manifests(spec):
            name = node["metadata"]["name"]
            try:
                core.create_node(node)
            except ApiException as exc:
                if exc.status != 409:
                    raise
            # The status is what the scheduler reads; a create may drop it, so set it.
            core.patch_node_status(name, {"status": node["status"]})


def _wait_apiserver(member: ClusterAccess, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            with member.api_client() as api_client:
                response = api_client.call_api("GET", f"{member.server}/readyz", _request_timeout=5)
                if response.status == 200:
                    return
                last = f"/readyz returned {response.status}"
        except Exception as exc:
            last = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        time.sleep(0.5)
    raise ClusterNotReady(f"{member.name}: apiserver at {member.server} not ready: {last}")


def wait_ready(member: ClusterAccess, spec: ClusterSpec, *, lite: bool, timeout: float) -> None:
    """Block until the cluster can run what tests and the demo ask of it."""
    _wait_apiserver(member, timeout=timeout)
    if lite:
        return
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    deadline = time.monotonic() + timeout
    missing = "nothing checked yet"
    with member.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        while time.monotonic() < deadline:
            nodes = core.list_node().items
            ready = [n.metadata.name for n in nodes if _node_ready(n)]
            try:
                core.read_namespaced_service_account("default", "default")
                has_sa = True
            except ApiException:
                has_sa = False
            if len(ready) >= spec.node_count and has_sa:
                return
            missing = f"{len(ready)}/{spec.node_count} nodes Ready" + (
                "" if has_sa else ", no default ServiceAccount yet (controller-manager)"
            )
            time.sleep(0.5)
    raise ClusterNotReady(f"{member.name}: not ready after {timeout:.0f}s: {missing}")


def _node_ready(node: Any) -> bool:
    for condition in (node.status.conditions or []) if node.status else []:
        if condition.type == "Ready":
            return bool(condition.status == "True")
    return False

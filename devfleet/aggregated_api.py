"""Routing an aggregated API (the hub's visibility API) to a server on this machine.

In a cluster the APIService names a Service selecting the hub's pods. Out of cluster the
hub is a local process, so the Service has no selector and a hand-made EndpointSlice
points at this machine's outward IPv4 address (Endpoints refuse loopback addresses); the
apiserver (with `--enable-aggregator-routing`, see devfleet.front_proxy) dials it there
and checks the hub's certificate against the Service's DNS name and `caBundle`.
"""

from __future__ import annotations

import base64
import socket
from typing import Any

VISIBILITY_GROUP = "visibility.kueue.x-k8s.io"
VISIBILITY_VERSIONS = ("v1beta1", "v1beta2")
"""The versions the hub serves; upstream registers an APIService for each."""

Json = dict[str, Any]


def machine_ipv4() -> str:
    """This machine's outward IPv4 address (a route lookup: no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.254", 9))
        address = str(probe.getsockname()[0])
    if address.startswith("127."):
        raise RuntimeError("no non-loopback IPv4 address on this machine for an APIService")
    return address


def api_service_route(
    *,
    service: str,
    namespace: str,
    ip: str,
    port: int,
    ca_pem: bytes,
    group: str = VISIBILITY_GROUP,
    versions: tuple[str, ...] = VISIBILITY_VERSIONS,
) -> list[Json]:
    """Service (no selector) → EndpointSlice (ip:port) → an APIService per version
    trusting `ca_pem`, in the order they must be created (the namespace must exist)."""
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": service, "namespace": namespace},
            "spec": {"ports": [{"name": "https", "port": 443, "targetPort": port}]},
        },
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": f"{service}-host",
                "namespace": namespace,
                "labels": {"kubernetes.io/service-name": service},
            },
            "addressType": "IPv4",
            "endpoints": [{"addresses": [ip], "conditions": {"ready": True}}],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
        },
        *(
            {
                "apiVersion": "apiregistration.k8s.io/v1",
                "kind": "APIService",
                "metadata": {"name": f"{version}.{group}"},
                "spec": {
                    "group": group,
                    "version": version,
                    "groupPriorityMinimum": 100,
                    "versionPriority": 100,
                    "service": {"name": service, "namespace": namespace, "port": 443},
                    "caBundle": base64.b64encode(ca_pem).decode(),
                },
            }
            for version in versions
        ),
    ]

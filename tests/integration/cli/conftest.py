"""A small fleet scene for CLI tests, written straight to the lite fleet's apiservers.

No hub runs: the test plays it, writing the objects and the statuses the hub would write
(MultiKueueCluster Active conditions, Workload conditions, WorkerCapacity reports), so the
CLI's output can be checked against exactly what is stored. Worker kubeconfig Secrets hold
the fleet's real worker kubeconfig (reachable) or one pointing at a closed port
(unreachable). A fake kubelet (HTTPS on 127.0.0.1, behind a Node object on the worker)
answers the worker apiserver's `pods/log` proxying, so logs really flow through it.
Everything cluster-scoped is deleted after the test; namespaced objects go with the
namespaces.
"""

from __future__ import annotations

import base64
import ssl
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from devfleet.cluster_access import RunningFleet
from tests.builders import (
    ClusterQueue,
    FlavorQuotas,
    Job,
    LocalQueue,
    MultiKueueCluster,
    PodTemplate,
    ResourceFlavor,
    WorkerCapacity,
    Workload,
)

KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
FLEETQ = "/apis/fleetq.dev/v1alpha1"
CLOSED_PORT_SERVER = "https://127.0.0.1:1"


def stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(kind: str, status: str, reason: str, message: str, at: datetime) -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": stamp(at),
    }


@dataclass
class Scene:
    """Names of one test's objects and the calls that create them."""

    fleet: RunningFleet
    rest: dict[str, Any]
    namespace: str
    hub_namespace: str
    suffix: str
    cleanup: list[tuple[str, str]] = field(default_factory=list)
    """(cluster, path) to delete afterwards."""
    worker_member: str = ""
    """The fleet member playing the worker (default: worker 1). Tests whose pods must stay
    exactly as written pick the manager: no kwok or scheduler ever runs there, while the
    session's workers are full clusters when e2e tests share the session."""

    condition = staticmethod(condition)
    stamp = staticmethod(stamp)

    @property
    def manager(self) -> Any:
        return self.rest[self.fleet.manager.name]

    @property
    def worker_cluster(self) -> str:
        return self.worker_member or self.fleet.workers[0].name

    def name(self, base: str) -> str:
        return f"{base}-{self.suffix}"

    def cli(self, *args: str) -> list[str]:
        return [*args, "--kubeconfig", str(self.fleet.manager.kubeconfig)]

    def make(self, cluster: str, collection: str, body: dict[str, Any]) -> dict[str, Any]:
        created = self.rest[cluster].request("POST", collection, body)
        if not body["metadata"].get("namespace"):
            self.cleanup.append((cluster, f"{collection}/{body['metadata']['name']}"))
        return created

    def set_status(self, cluster: str, path: str, kind: str, status: dict[str, Any]) -> None:
        api_version = "batch/v1" if kind == "Job" else _API_VERSIONS[kind]
        self.rest[cluster].apply(
            path, {"apiVersion": api_version, "kind": kind, "status": status}, subresource="status"
        )

    # ----------------------------------------------------------------- queues
    def queues(self, *, quota: str = "10") -> tuple[str, str, str]:
        """A ResourceFlavor, a ClusterQueue with cpu quota, a LocalQueue: their names."""
        flavor, cq, lq = self.name("rf"), self.name("cq"), "lq"
        m = self.fleet.manager.name
        self.make(m, f"{KUEUE}/resourceflavors", ResourceFlavor(flavor).obj())
        queue = ClusterQueue(cq).namespace_selector()
        queue.resource_group(FlavorQuotas(flavor, {"cpu": quota}))
        self.make(m, f"{KUEUE}/clusterqueues", queue.obj())
        self.make(
            m,
            f"{KUEUE}/namespaces/{self.namespace}/localqueues",
            LocalQueue(lq, self.namespace).cluster_queue(cq).obj(),
        )
        return flavor, cq, lq

    # -------------------------------------------------------------- workloads
    def workload(
        self,
        name: str,
        *,
        queue: str = "lq",
        priority: int = 0,
        owner: dict[str, Any] | None = None,
        status: dict[str, Any] | None = None,
        active: bool = True,
    ) -> dict[str, Any]:
        workload = Workload(name, self.namespace)
        if owner:
            workload.owner_reference(owner)
        template = PodTemplate(image="busybox", restart_policy=None).request("cpu", "1")
        workload.queue(queue).priority(priority).active(active)
        created = self.make(
            self.fleet.manager.name,
            f"{KUEUE}/namespaces/{self.namespace}/workloads",
            workload.pod_set("main", 1, template=template).obj(),
        )
        if status:
            self.set_status(
                self.fleet.manager.name,
                f"{KUEUE}/namespaces/{self.namespace}/workloads/{name}",
                "Workload",
                status,
            )
        return created

    def job(self, name: str) -> dict[str, Any]:
        """A suspended batch/v1 Job on the manager (nothing runs it: the manager is API-only)."""
        body = Job(name, self.namespace, container="c", image="busybox").suspend().obj()
        return self.manager.request(
            "POST", f"/apis/batch/v1/namespaces/{self.namespace}/jobs", body
        )

    def event(self, kind: str, name: str, reason: str, message: str) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{name}.{uuid.uuid4().hex[:8]}", "namespace": self.namespace},
            "involvedObject": {
                "apiVersion": "batch/v1" if kind == "Job" else "kueue.x-k8s.io/v1beta2",
                "kind": kind,
                "name": name,
                "namespace": self.namespace,
            },
            "reason": reason,
            "message": message,
            "type": "Normal",
            "firstTimestamp": stamp(datetime.now(UTC)),
            "lastTimestamp": stamp(datetime.now(UTC)),
            "count": 1,
            "source": {"component": "fleetq-tests"},
        }
        self.manager.request("POST", f"/api/v1/namespaces/{self.namespace}/events", body)

    # ---------------------------------------------------------------- workers
    def worker(
        self, name: str, *, reachable: bool = True, active: bool = True, powerless: bool = False
    ) -> None:
        """A MultiKueueCluster + kubeconfig Secret; reachable ones point at the worker.

        `powerless`: the kubeconfig holds the token of a ServiceAccount with no RBAC at all.
        """
        access = self.fleet.cluster(self.worker_cluster)
        document = yaml.safe_load(access.kubeconfig.read_text())
        if not reachable:
            for entry in document["clusters"]:
                entry["cluster"]["server"] = CLOSED_PORT_SERVER
        if powerless:
            for entry in document["users"]:
                entry["user"] = {"token": self.service_account_token("powerless")}
        secret = f"{name}-kubeconfig"
        self.manager.request(
            "POST",
            f"/api/v1/namespaces/{self.hub_namespace}/secrets",
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": secret, "namespace": self.hub_namespace},
                "data": {
                    "kubeconfig": base64.b64encode(yaml.safe_dump(document).encode()).decode()
                },
            },
        )
        self.make(
            self.fleet.manager.name,
            f"{KUEUE}/multikueueclusters",
            MultiKueueCluster(name).kubeconfig(secret, "Secret").obj(),
        )
        now = datetime.now(UTC)
        state = (
            condition("Active", "True", "Active", "Connected", now)
            if active
            else condition(
                "Active", "False", "ClientConnectionFailed", "dial tcp 127.0.0.1:1: refused", now
            )
        )
        self.set_status(
            self.fleet.manager.name,
            f"{KUEUE}/multikueueclusters/{name}",
            "MultiKueueCluster",
            {"conditions": [state]},
        )

    def service_account_token(self, account: str) -> str:
        """A short-lived token of a new ServiceAccount in the test namespace on worker 1."""
        rest = self.rest[self.worker_cluster]
        accounts = f"/api/v1/namespaces/{self.namespace}/serviceaccounts"
        rest.request(
            "POST",
            accounts,
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account}},
        )
        answer = rest.request(
            "POST",
            f"{accounts}/{account}/token",
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {"expirationSeconds": 600},
            },
        )
        return str(answer["status"]["token"])

    def capacity_report(self, worker: str, flavor: str, *, age: timedelta) -> None:
        """The WorkerCapacity an agent on worker 1 would publish for `worker`."""
        self.make(
            self.worker_cluster,
            f"{FLEETQ}/workercapacities",
            WorkerCapacity(worker).cluster_name(worker).obj(),
        )
        observed = datetime.now(UTC) - age
        self.set_status(
            self.worker_cluster,
            f"{FLEETQ}/workercapacities/{worker}",
            "WorkerCapacity",
            {
                "observedTime": stamp(observed),
                "flavors": [
                    {
                        "name": flavor,
                        "nodeCount": 3,
                        "allocatable": {"cpu": "48", "nvidia.com/gpu": "8"},
                        "requested": {"cpu": "12", "nvidia.com/gpu": "6"},
                        "free": {"cpu": "36", "nvidia.com/gpu": "2"},
                    }
                ],
            },
        )


_API_VERSIONS = {
    "Workload": "kueue.x-k8s.io/v1beta2",
    "MultiKueueCluster": "kueue.x-k8s.io/v1beta2",
    "ClusterQueue": "kueue.x-k8s.io/v1beta2",
    "LocalQueue": "kueue.x-k8s.io/v1beta2",
    "WorkerCapacity": "fleetq.dev/v1alpha1",
}


@pytest.fixture
def scene(
    kueue_crds: RunningFleet,
    kube_rest: dict[str, Any],
    namespace_factory: Callable[..., str],
) -> Iterator[Scene]:
    namespace = namespace_factory("cli")
    hub_namespace = namespace_factory("hub", clusters=(kueue_crds.manager,))
    made = Scene(kueue_crds, kube_rest, namespace, hub_namespace, uuid.uuid4().hex[:6])
    yield made
    for cluster, path in reversed(made.cleanup):
        kube_rest[cluster].delete(path)


# ------------------------------------------------------------------ fake kubelet
@dataclass
class FakeKubelet:
    """Serves `/containerLogs/{ns}/{pod}/{container}` for the worker's apiserver to proxy."""

    port: int
    logs: dict[tuple[str, str, str], list[str]]
    requests: list[str]


class _LogHandler(BaseHTTPRequestHandler):
    kubelet: FakeKubelet

    def do_GET(self) -> None:
        self.kubelet.requests.append(self.path)
        parts = self.path.split("?")[0].strip("/").split("/")
        if len(parts) != 4 or parts[0] != "containerLogs":
            self.send_error(404)
            return
        lines = self.kubelet.logs.get((parts[1], parts[2], parts[3]))
        if lines is None:
            self.send_error(404, "container not found")
            return
        body = "".join(f"{line}\n" for line in lines).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def fake_kubelet() -> Iterator[FakeKubelet]:
    from core.manager.webhook_certs import issue

    bundle = issue(["127.0.0.1"], datetime.now(UTC), common_name="fake-kubelet")
    kubelet = FakeKubelet(port=0, logs={}, requests=[])
    handler = type("Handler", (_LogHandler,), {"kubelet": kubelet})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with tempfile.TemporaryDirectory() as directory:
        cert, key = Path(directory, "tls.crt"), Path(directory, "tls.key")
        cert.write_bytes(bundle.tls_cert)
        key.write_bytes(bundle.tls_key)
        context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    kubelet.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield kubelet
    server.shutdown()
    server.server_close()

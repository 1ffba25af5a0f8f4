"""The hub chart on a real node: values, readiness, the Lease, a Job through the webhook.

Here the chart's Deployment runs for real (elsewhere in devfleet it is kept at zero
replicas): image `localhost/fleetq:<version>` imported into the node's containerd
(`pullPolicy: Never`), a nodeSelector and a toleration for the real node, and
KUBERNETES_SERVICE_HOST/PORT naming the manager's apiserver at the node's address, since
no Service proxy routes the `kubernetes` ClusterIP (devfleet.node_network). Everything
else is the chart's own: probes, the webhook Service and certificates, leader election.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tenacity import RetryError, retry, retry_if_result, stop_after_delay, wait_fixed

from devfleet.chart_install import HUB_CHART, HUB_NAMESPACE, HUB_RELEASE, helm_install
from devfleet.cluster_access import ClusterAccess
from devfleet.kubelet_process import REAL_NODE_LABEL
from devfleet.real_node import RealNodeInfo

Progress = Callable[[str], None]
LEASE_NAME = "c1f6bfd2.kueue.x-k8s.io"
"""The hub's leader-election Lease (upstream's `leaderElection.resourceName` default)."""
HUB_SELECTOR = "app.kubernetes.io/instance=" + HUB_RELEASE
WEBHOOK_CONFIGURATIONS = (
    "fleetq-mutating-webhook-configuration",
    "fleetq-validating-webhook-configuration",
)
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


class RealNodeHubError(RuntimeError):
    """The hub did not become ready, elect a leader or admit a Job in time."""


def hub_values(
    node: RealNodeInfo,
    *,
    log_level: str = "info",
    pod_annotations: Mapping[str, str] | None = None,
    replicas: int = 2,
) -> dict[str, Any]:
    """The hub chart's values that run it on `node` (everything else: the chart's defaults)."""
    repository, tag = node.image.rsplit(":", 1)
    return {
        "image": {"repository": repository, "tag": tag, "pullPolicy": "Never"},
        "replicas": replicas,
        "logLevel": log_level,
        "podAnnotations": dict(pod_annotations or {}),
        "nodeSelector": {REAL_NODE_LABEL: "true"},
        "tolerations": [
            {"key": REAL_NODE_LABEL, "operator": "Equal", "value": "true", "effect": "NoSchedule"}
        ],
        "extraEnv": [
            {"name": "KUBERNETES_SERVICE_HOST", "value": node.address},
            {"name": "KUBERNETES_SERVICE_PORT", "value": str(node.apiserver_port)},
        ],
    }


def install_hub(
    manager: ClusterAccess, values: Mapping[str, Any], workdir: Path
) -> list[dict[str, Any]]:
    """`helm upgrade --install` of the hub chart in kueue-system; the release's objects."""
    workdir.mkdir(parents=True, exist_ok=True)
    return helm_install(
        manager, HUB_CHART, HUB_RELEASE, HUB_NAMESPACE, values, workdir / "real-node-hub.yaml"
    )


@dataclass(frozen=True, slots=True)
class HubPod:
    name: str
    node: str
    ip: str
    ready: bool
    template_hash: str
    restarts: int


def hub_pods(manager: ClusterAccess, *, include_terminating: bool = False) -> list[HubPod]:
    """The release's pods (by default those not being deleted)."""
    from kubernetes import client

    with manager.api_client() as api_client:
        items = (
            client.CoreV1Api(api_client)
            .list_namespaced_pod(HUB_NAMESPACE, label_selector=HUB_SELECTOR)
            .items
        )
    pods = []
    for pod in items:
        if pod.metadata.deletion_timestamp is not None and not include_terminating:
            continue
        conditions = {c.type: c.status for c in (pod.status.conditions or [])}
        statuses = pod.status.container_statuses or []
        pods.append(
            HubPod(
                name=pod.metadata.name,
                node=pod.spec.node_name or "",
                ip=pod.status.pod_ip or "",
                ready=conditions.get("Ready") == "True",
                template_hash=(pod.metadata.labels or {}).get("pod-template-hash", ""),
                restarts=sum(s.restart_count for s in statuses),
            )
        )
    return pods


def wait_rolled_out(
    manager: ClusterAccess, replicas: int, *, timeout: float, progress: Progress = print
) -> list[HubPod]:
    """Until the Deployment's rollout is done: `replicas` pods of its current template,
    all Ready, no old pod left; prints each change of the pods' states."""
    from kubernetes import client

    last: list[str] = []

    @retry(
        stop=stop_after_delay(timeout),
        wait=wait_fixed(2.0),
        retry=retry_if_result(lambda pods: pods is None),
    )
    def rolled_out() -> list[HubPod] | None:
        nonlocal last
        with manager.api_client() as api_client:
            deployment = client.AppsV1Api(api_client).read_namespaced_deployment(
                HUB_RELEASE, HUB_NAMESPACE
            )
        pods = hub_pods(manager)
        states = sorted(
            f"{p.name}:{'Ready' if p.ready else 'starting'}@{p.node or '-'}" for p in pods
        )
        if states != last:
            progress(f"    hub pods: {', '.join(states) or 'none yet'}")
            last = states
        status = deployment.status
        done = (
            (status.observed_generation or 0) >= deployment.metadata.generation
            and (status.updated_replicas or 0) == replicas
            and (status.ready_replicas or 0) == replicas
            and (status.replicas or 0) == replicas
            and len(pods) == replicas
            and all(p.ready for p in pods)
        )
        return pods if done else None

    try:
        pods = rolled_out()
    except RetryError as exc:
        raise RealNodeHubError(
            f"the hub Deployment did not roll out {replicas} Ready pods in {timeout:.0f}s "
            f"(last: {', '.join(last) or 'no pods'})"
        ) from exc
    assert pods is not None  # retried until it was not
    return pods


def lease_holder(manager: ClusterAccess) -> str | None:
    """The pod holding the hub's Lease (its identity is `<pod name>_<random>`), if any."""
    from kubernetes import client

    with manager.api_client() as api_client:
        try:
            lease = client.CoordinationV1Api(api_client).read_namespaced_lease(
                LEASE_NAME, HUB_NAMESPACE
            )
        except client.ApiException as exc:
            if exc.status == 404:
                return None
            raise
    holder = lease.spec.holder_identity
    return str(holder).rsplit("_", 1)[0] if holder else None


def wait_leader(manager: ClusterAccess, among: Callable[[str], bool], *, timeout: float) -> str:
    """Until a pod for which `among(name)` holds the Lease; its name."""

    @retry(
        stop=stop_after_delay(timeout),
        wait=wait_fixed(1.0),
        retry=retry_if_result(lambda holder: holder is None),
    )
    def leader() -> str | None:
        holder = lease_holder(manager)
        return holder if holder is not None and among(holder) else None

    try:
        return str(leader())
    except RetryError as exc:
        raise RealNodeHubError(
            f"no expected pod took the Lease {HUB_NAMESPACE}/{LEASE_NAME} in {timeout:.0f}s "
            f"(holder: {lease_holder(manager)})"
        ) from exc


def create_queues(manager: ClusterAccess, namespace: str, suffix: str) -> None:
    """A ResourceFlavor, a ClusterQueue of 4 CPUs and the LocalQueue `main` in `namespace`
    (each one through the hub's validating webhook)."""
    from kubernetes import client

    group, version = "kueue.x-k8s.io", "v1beta2"
    flavor, queue = f"real-node-rf-{suffix}", f"real-node-cq-{suffix}"
    with manager.api_client() as api_client:
        api = client.CustomObjectsApi(api_client)
        api.create_cluster_custom_object(
            group,
            version,
            "resourceflavors",
            {
                "apiVersion": f"{group}/{version}",
                "kind": "ResourceFlavor",
                "metadata": {"name": flavor},
                "spec": {},
            },
        )
        api.create_cluster_custom_object(
            group,
            version,
            "clusterqueues",
            {
                "apiVersion": f"{group}/{version}",
                "kind": "ClusterQueue",
                "metadata": {"name": queue},
                "spec": {
                    "namespaceSelector": {
                        "matchLabels": {"kubernetes.io/metadata.name": namespace}
                    },
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu"],
                            "flavors": [
                                {
                                    "name": flavor,
                                    "resources": [{"name": "cpu", "nominalQuota": "4"}],
                                }
                            ],
                        }
                    ],
                },
            },
        )
        api.create_namespaced_custom_object(
            group,
            version,
            namespace,
            "localqueues",
            {
                "apiVersion": f"{group}/{version}",
                "kind": "LocalQueue",
                "metadata": {"name": "main", "namespace": namespace},
                "spec": {"clusterQueue": queue},
            },
        )


@dataclass(frozen=True, slots=True)
class JobAdmission:
    """What happened to a Job created unsuspended with a queue label."""

    name: str
    suspended_on_create: bool
    """The create answer already had `suspend: true`: the mutating webhook ran."""
    admitted_by: str
    seconds: float


def submit_and_wait_admitted(
    manager: ClusterAccess, namespace: str, *, timeout: float = 90.0
) -> JobAdmission:
    """Create a Job (suspend: false, queue `main`) and wait until the hub admitted its
    Workload and unsuspended it."""
    from kubernetes import client

    name = f"real-node-job-{uuid.uuid4().hex[:6]}"
    body = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": {QUEUE_LABEL: "main"}},
        "spec": {
            "suspend": False,
            "parallelism": 1,
            "completions": 1,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "main",
                            "image": "localhost/fleetq:0.0.0-not-run",
                            "resources": {"requests": {"cpu": "1"}},
                        }
                    ],
                }
            },
        },
    }
    started = time.monotonic()
    with manager.api_client() as api_client:
        created = client.BatchV1Api(api_client).create_namespaced_job(namespace, body)
    suspended = bool(created.spec.suspend)

    @retry(
        stop=stop_after_delay(timeout),
        wait=wait_fixed(1.0),
        retry=retry_if_result(lambda found: found is None),
    )
    def admitted() -> str | None:
        with manager.api_client() as api_client:
            job = client.BatchV1Api(api_client).read_namespaced_job(name, namespace)
            workloads = client.CustomObjectsApi(api_client).list_namespaced_custom_object(
                "kueue.x-k8s.io", "v1beta2", namespace, "workloads"
            )["items"]
        for workload in workloads:
            owners = workload["metadata"].get("ownerReferences") or []
            if not any(o.get("name") == name for o in owners):
                continue
            admission = (workload.get("status") or {}).get("admission")
            if admission and job.spec.suspend is False:
                return str(admission.get("clusterQueue", ""))
        return None

    try:
        queue = admitted()
    except RetryError as exc:
        raise RealNodeHubError(
            f"Job {namespace}/{name} was not admitted and started in {timeout:.0f}s"
        ) from exc
    return JobAdmission(name, suspended, str(queue), time.monotonic() - started)

"""Install fleetq's helm charts into a local fleet and hand out the charts' identities.

On real clusters the hub and the agents run as pods of the charts' Deployments, with the
tokens of the charts' ServiceAccounts. Here there is no image to run (it cannot be built on
these machines), so the charts are installed with `replicas: 0`: every object of the
release exists (ServiceAccount, RBAC, ConfigMap, Services, the Deployment scaled to zero)
and the processes run outside the cluster instead. To keep them honest they get nothing
but what a pod would get: a TokenRequest token of the chart's ServiceAccount, in a
kubeconfig holding only the server, its CA and that token. Whatever the chart's RBAC does
not grant, they are refused.

Usage:

    charts = install_fleet_charts(fleet, workdir, progress=print)
    # fleetq hub   --kubeconfig charts.hub.kubeconfig --config charts.hub_configuration
    # fleetq agent --kubeconfig charts.agents["worker-1"].kubeconfig (POD_NAMESPACE=...)
    uninstall_fleet_charts(fleet, charts)
"""

from __future__ import annotations

import base64
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from devfleet.cluster_access import ClusterAccess, RunningFleet
from devfleet.toolchain import REPO_ROOT, binary_path

Progress = Callable[[str], None]

CHARTS_DIR = REPO_ROOT / "charts"
HUB_CHART = "fleetq-hub"
WORKER_CHART = "fleetq-worker"
HUB_NAMESPACE = "kueue-system"
"""The hub's namespace: where join puts the workers' kubeconfig Secrets (as upstream)."""
AGENT_NAMESPACE = "fleetq-system"
HUB_RELEASE = "fleetq-hub"
AGENT_RELEASE = "fleetq-worker"
TOKEN_LIFETIME_SECONDS = 3600
"""Long enough for a demo or a test session; the apiserver accepts 10 minutes at least."""
HELM_TIMEOUT_SECONDS = 180

HUB_VALUES: dict[str, Any] = {
    "replicas": 0,
    # The apiserver reaches a Service-based webhook through a ClusterIP, and nothing routes
    # ClusterIPs in a kwok fleet: a registered but unreachable webhook (failurePolicy Fail)
    # would refuse every Job. Out of cluster the hub runs with --no-webhooks.
    "webhook": {"enabled": False},
}
AGENT_VALUES: dict[str, Any] = {"replicas": 0}


class ChartInstallError(RuntimeError):
    """helm or a TokenRequest failed; the message says which cluster and what happened."""


@dataclass(frozen=True, slots=True)
class ChartIdentity:
    """A chart's ServiceAccount on one cluster, and a kubeconfig that acts as it."""

    cluster: str
    namespace: str
    release: str
    service_account: str
    kubeconfig: Path
    expires_at: str

    @property
    def username(self) -> str:
        """How the apiserver names this identity (in audit logs and RBAC refusals)."""
        return f"system:serviceaccount:{self.namespace}:{self.service_account}"


@dataclass(frozen=True, slots=True)
class FleetCharts:
    """What `install_fleet_charts` made: the hub's identity and Configuration, one agent
    identity per worker."""

    hub: ChartIdentity
    hub_configuration: Path
    agents: Mapping[str, ChartIdentity] = field(default_factory=dict)


def _call(args: list[str], *, what: str) -> str:
    result = subprocess.run(
        args, capture_output=True, text=True, timeout=HELM_TIMEOUT_SECONDS, check=False
    )
    if result.returncode != 0:
        raise ChartInstallError(f"{what} failed (exit {result.returncode}): {result.stderr}")
    return result.stdout


def helm_install(
    access: ClusterAccess,
    chart: str,
    release: str,
    namespace: str,
    values: Mapping[str, Any],
    values_file: Path,
) -> list[dict[str, Any]]:
    """`helm upgrade --install` (so a second run upgrades in place); the release's objects."""
    helm = binary_path("helm")
    if not helm.exists():
        raise ChartInstallError(f"helm is not built ({helm}); run `make tools`")
    values_file.write_text(yaml.safe_dump(dict(values)))
    base = [str(helm), "--kubeconfig", str(access.kubeconfig), "-n", namespace]
    _call(
        [
            *base,
            "upgrade",
            "--install",
            release,
            str(CHARTS_DIR / chart),
            "--create-namespace",
            "-f",
            str(values_file),
        ],
        what=f"{access.name}: helm install {chart}",
    )
    manifest = _call([*base, "get", "manifest", release], what=f"{access.name}: helm get")
    return [doc for doc in yaml.safe_load_all(manifest) if doc]


def helm_uninstall(access: ClusterAccess, release: str, namespace: str) -> None:
    helm = binary_path("helm")
    _call(
        [str(helm), "--kubeconfig", str(access.kubeconfig), "-n", namespace, "uninstall", release],
        what=f"{access.name}: helm uninstall {release}",
    )


def service_account_of(manifest: list[dict[str, Any]]) -> str:
    """The name of the one ServiceAccount a release creates."""
    accounts = [o["metadata"]["name"] for o in manifest if o.get("kind") == "ServiceAccount"]
    if len(accounts) != 1:
        raise ChartInstallError(f"expected one ServiceAccount in the release, found {accounts}")
    return str(accounts[0])


def identity_kubeconfig(source: Path, token: str, user: str) -> dict[str, Any]:
    """A kubeconfig with `source`'s current server and CA and `token` as the only credential
    (no client certificate, no file references)."""
    document = yaml.safe_load(source.read_text())
    context = next(c for c in document["contexts"] if c["name"] == document["current-context"])
    cluster = next(c for c in document["clusters"] if c["name"] == context["context"]["cluster"])
    server = cluster["cluster"]["server"]
    ca_data = cluster["cluster"].get("certificate-authority-data")
    if not ca_data:
        ca_file = cluster["cluster"].get("certificate-authority")
        if not ca_file:
            raise ChartInstallError(f"{source}: the current context's cluster names no CA")
        ca_data = base64.b64encode(Path(ca_file).read_bytes()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "cluster",
                "cluster": {"server": server, "certificate-authority-data": ca_data},
            }
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": user, "context": {"cluster": "cluster", "user": user}}],
        "current-context": user,
    }


def mint_identity(
    access: ClusterAccess,
    *,
    namespace: str,
    service_account: str,
    release: str,
    path: Path,
    lifetime_seconds: int = TOKEN_LIFETIME_SECONDS,
) -> ChartIdentity:
    """A TokenRequest token for the ServiceAccount, written as a kubeconfig at `path`."""
    from kubernetes import client

    body = {"spec": {"expirationSeconds": lifetime_seconds}}
    try:
        with access.api_client() as api_client:
            answer = client.CoreV1Api(api_client).create_namespaced_service_account_token(
                service_account, namespace, body
            )
    except client.ApiException as error:
        raise ChartInstallError(
            f"{access.name}: TokenRequest for {namespace}/{service_account} failed "
            f"(HTTP {error.status}): {error.reason}"
        ) from error
    user = f"{namespace}-{service_account}"
    document = identity_kubeconfig(access.kubeconfig, answer.status.token, user)
    path.write_text(yaml.safe_dump(document))
    path.chmod(0o600)
    expires = answer.status.expiration_timestamp
    return ChartIdentity(
        cluster=access.name,
        namespace=namespace,
        release=release,
        service_account=service_account,
        kubeconfig=path,
        expires_at=expires.isoformat() if expires else "",
    )


def hub_configuration_of(access: ClusterAccess, manifest: list[dict[str, Any]]) -> str:
    """The Configuration file the chart's ConfigMap holds, as the hub pod would mount it."""
    from kubernetes import client

    (config_map,) = [o for o in manifest if o.get("kind") == "ConfigMap"]
    meta = config_map["metadata"]
    with access.api_client() as api_client:
        stored = client.CoreV1Api(api_client).read_namespaced_config_map(
            meta["name"], meta["namespace"]
        )
    return str(stored.data["config.yaml"])


def install_fleet_charts(
    fleet: RunningFleet,
    workdir: Path,
    *,
    hub_values: Mapping[str, Any] | None = None,
    token_lifetime_seconds: int = TOKEN_LIFETIME_SECONDS,
    progress: Progress = print,
) -> FleetCharts:
    """fleetq-hub on the manager, fleetq-worker on every worker, then one identity each.

    `hub_values` are merged over HUB_VALUES at the top level (e.g. `configuration`)."""
    workdir.mkdir(parents=True, exist_ok=True)
    manager = fleet.manager
    values = {**HUB_VALUES, **(hub_values or {})}
    manifest = helm_install(
        manager, HUB_CHART, HUB_RELEASE, HUB_NAMESPACE, values, workdir / "hub-values.yaml"
    )
    progress(
        f"  {manager.name}: helm installed {HUB_CHART} in {HUB_NAMESPACE} "
        f"({len(manifest)} objects; Deployment at 0 replicas: no image here, "
        "the hub runs as a local process with the chart's identity)"
    )
    configuration = workdir / "hub-config.yaml"
    configuration.write_text(hub_configuration_of(manager, manifest))
    hub = mint_identity(
        manager,
        namespace=HUB_NAMESPACE,
        service_account=service_account_of(manifest),
        release=HUB_RELEASE,
        path=workdir / "hub-identity.kubeconfig",
        lifetime_seconds=token_lifetime_seconds,
    )
    agents: dict[str, ChartIdentity] = {}
    for worker in fleet.workers:
        worker_manifest = helm_install(
            worker,
            WORKER_CHART,
            AGENT_RELEASE,
            AGENT_NAMESPACE,
            {**AGENT_VALUES, "clusterName": worker.name},
            workdir / f"{worker.name}-values.yaml",
        )
        progress(
            f"  {worker.name}: helm installed {WORKER_CHART} in {AGENT_NAMESPACE} "
            f"({len(worker_manifest)} objects; Deployment at 0 replicas)"
        )
        agents[worker.name] = mint_identity(
            worker,
            namespace=AGENT_NAMESPACE,
            service_account=service_account_of(worker_manifest),
            release=AGENT_RELEASE,
            path=workdir / f"{worker.name}-agent-identity.kubeconfig",
            lifetime_seconds=token_lifetime_seconds,
        )
    progress(
        f"  tokens minted (TokenRequest, {token_lifetime_seconds // 60} min) for "
        f"{hub.username} and {len(agents)} agent identities"
    )
    return FleetCharts(hub=hub, hub_configuration=configuration, agents=agents)


def uninstall_fleet_charts(fleet: RunningFleet, charts: FleetCharts) -> None:
    """Remove both releases (CRDs stay, as helm leaves the crds/ folder alone)."""
    helm_uninstall(fleet.manager, charts.hub.release, charts.hub.namespace)
    for worker in fleet.workers:
        agent = charts.agents.get(worker.name)
        if agent is not None:
            helm_uninstall(worker, agent.release, agent.namespace)

"""`fleetq hub`: run the hub (queueing engine and controllers) against a manager cluster."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "hub",
        help="run the hub: Kueue-compatible queueing on a manager cluster",
        description=(
            "Run the hub against a cluster: informers, the queueing engine, the scheduler "
            "loop and the controllers, with leader election when the configuration asks."
        ),
    )
    parser.add_argument(
        "--config",
        type=Path,
        help="upstream Kueue Configuration file (config.kueue.x-k8s.io/v1beta2)",
    )
    parser.add_argument(
        "--kubeconfig",
        type=Path,
        help="kubeconfig of the manager cluster (default: in-cluster, $KUBECONFIG, ~/.kube/config)",
    )
    parser.add_argument(
        "--health-port", type=int, help="port of /healthz and /readyz (default: from --config)"
    )
    parser.add_argument(
        "--metrics-port", type=int, help="port of /metrics (default: from --config)"
    )
    parser.add_argument(
        "--visibility-port",
        type=int,
        help="serve the pending-workloads API on this port (default: off); plain HTTP and "
        "open unless --visibility-tls or --visibility-cert-dir",
    )
    parser.add_argument(
        "--dashboard-port",
        type=int,
        help="serve the fleet dashboard on this port (default: off); always authenticated "
        "(bearer token via TokenReview, each view by SubjectAccessReview)",
    )
    parser.add_argument(
        "--dashboard-cert-dir",
        type=Path,
        metavar="DIR",
        help="serve the dashboard over TLS with tls.crt and tls.key from DIR",
    )
    secure = parser.add_argument_group("TLS and delegated authentication")
    secure.add_argument(
        "--visibility-tls",
        action="store_true",
        help="serve the visibility API over TLS with a self-signed certificate for the "
        "Service --visibility-service, and authenticate/authorize callers as an aggregated "
        "API server does (front proxy, TokenReview, SubjectAccessReview)",
    )
    secure.add_argument(
        "--visibility-cert-dir",
        type=Path,
        metavar="DIR",
        help="like --visibility-tls, with tls.crt and tls.key from DIR (a mounted TLS Secret)",
    )
    secure.add_argument(
        "--visibility-service",
        default="fleetq-hub-visibility",
        metavar="NAME",
        help="the visibility Service's name, for the self-signed certificate's DNS names "
        "(default: fleetq-hub-visibility, in the Configuration's namespace)",
    )
    secure.add_argument(
        "--metrics-auth",
        action="store_true",
        help="/metrics requires an authenticated caller allowed to get that path "
        "(/healthz and /readyz stay open)",
    )
    parser.add_argument(
        "--identity",
        help="leader-election identity (default: <hostname>_<random>; in a pod, its name)",
    )
    webhooks = parser.add_argument_group("admission webhooks")
    webhooks.add_argument(
        "--no-webhooks",
        action="store_true",
        help="do not serve the admission webhooks (Jobs must then be created suspended)",
    )
    webhooks.add_argument(
        "--webhook-url-host",
        metavar="HOST",
        help=(
            "out of cluster: serve the webhooks on HOST and register URL-based webhook "
            "configurations (https://HOST:PORT) with the hub's CA bundle; they are removed "
            "again on a clean stop. Without it the chart's Service-based configurations "
            "are used"
        ),
    )
    webhooks.add_argument(
        "--webhook-port",
        type=int,
        help="port of the webhook server (default: webhook.port of --config; 0: any free port)",
    )
    parser.add_argument(
        "--log-level", default="info", choices=("debug", "info", "warning", "error")
    )
    parser.set_defaults(handler=run_hub)


def run_hub(args: argparse.Namespace) -> int:
    from cli.process_start import load_configuration_for

    configuration = load_configuration_for("fleetq hub", args.config, args.log_level)
    if configuration is None:
        return 2
    return asyncio.run(_serve(args, configuration))


async def _serve(args: argparse.Namespace, configuration: Any) -> int:
    from core.kube.client import KubeClient
    from core.kube.cluster_config import ClusterConfigError, load_cluster_config
    from core.manager.webhook_service import UrlRegistration
    from hub.app import Hub, HubOptions

    try:
        cluster = await load_cluster_config(args.kubeconfig)
    except (ClusterConfigError, OSError) as error:
        print(f"fleetq hub: {error}", file=sys.stderr)
        return 2
    try:
        visibility_certificate = _visibility_certificate(args, configuration.namespace)
        dashboard_certificate = _dashboard_certificate(args)
    except OSError as error:
        print(f"fleetq hub: serving certificate: {error}", file=sys.stderr)
        return 2
    client = KubeClient(cluster, qps=configuration.client_qps, burst=configuration.client_burst)
    hub = Hub(
        configuration,
        client,
        HubOptions(
            health_port=args.health_port,
            metrics_port=args.metrics_port,
            visibility_port=args.visibility_port,
            visibility_certificate=visibility_certificate,
            dashboard_port=args.dashboard_port,
            dashboard_certificate=dashboard_certificate,
            metrics_auth=args.metrics_auth,
            identity=args.identity or "",
            webhooks=not args.no_webhooks,
            webhook_port=args.webhook_port,
            webhook_registration=(
                UrlRegistration(args.webhook_url_host) if args.webhook_url_host else None
            ),
        ),
    )
    from cli.process_start import run_until_signalled

    return await run_until_signalled("fleetq hub", hub.run, client)


def _visibility_certificate(args: argparse.Namespace, namespace: str) -> Any:
    """The visibility server's certificate, when TLS was asked for (None: plain HTTP)."""
    from core.manager.serving_tls import ServingCertificate
    from core.manager.webhook_certs import service_dns_names

    if args.visibility_cert_dir is not None:
        return ServingCertificate.from_dir(args.visibility_cert_dir)
    if args.visibility_tls:
        return ServingCertificate.self_signed(service_dns_names(args.visibility_service, namespace))
    return None


def _dashboard_certificate(args: argparse.Namespace) -> Any:
    from core.manager.serving_tls import ServingCertificate

    if args.dashboard_cert_dir is None:
        return None
    return ServingCertificate.from_dir(args.dashboard_cert_dir)

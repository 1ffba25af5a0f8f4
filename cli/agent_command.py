"""`fleetq agent`: run the worker agent (local admission + capacity report) on a worker."""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
from pathlib import Path
from typing import Any

# A DNS-1123 subdomain, as the WorkerCapacity object's name must be.
_OBJECT_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
CLUSTER_NAME_ENV = "FLEETQ_CLUSTER_NAME"


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "agent",
        help="run the worker agent: local admission and the WorkerCapacity report",
        description=(
            "Run on a worker cluster: admit Workloads locally with the hub's engine and "
            "controllers (as an upstream Kueue worker does for MultiKueue) and keep this "
            "cluster's WorkerCapacity report (fleetq.dev/v1alpha1) current for the hub."
        ),
    )
    parser.add_argument(
        "--kubeconfig",
        type=Path,
        help="kubeconfig of the worker cluster (default: in-cluster, $KUBECONFIG, ~/.kube/config)",
    )
    parser.add_argument(
        "--config",
        type=Path,
        help="upstream Kueue Configuration file (config.kueue.x-k8s.io/v1beta2)",
    )
    parser.add_argument(
        "--cluster-name",
        help=(
            f"name of this worker and of its WorkerCapacity object (default: ${CLUSTER_NAME_ENV}, "
            "else the kubeconfig context, else 'in-cluster')"
        ),
    )
    parser.add_argument(
        "--health-port", type=int, help="port of /healthz and /readyz (default: from --config)"
    )
    parser.add_argument(
        "--metrics-port", type=int, help="port of /metrics (default: from --config)"
    )
    parser.add_argument(
        "--identity",
        help="leader-election identity (default: $POD_NAME, else <hostname>_<random>)",
    )
    parser.add_argument(
        "--lease-name",
        help=(
            "leader-election Lease to hold (default: leaderElection.resourceName unless it is "
            "upstream Kueue's default, then fleetq-agent.fleetq.dev, so an agent beside a hub "
            "never contends for the hub's Lease; name Kueue's own where the agent is the "
            "worker's only Kueue)"
        ),
    )
    webhooks = parser.add_argument_group("admission webhooks (off by default)")
    webhooks.add_argument(
        "--webhooks",
        action="store_true",
        help="serve the admission webhooks (Jobs created on the worker directly get suspended)",
    )
    webhooks.add_argument(
        "--webhook-url-host",
        metavar="HOST",
        help="out of cluster: serve on HOST and register URL-based webhook configurations",
    )
    webhooks.add_argument(
        "--webhook-port", type=int, help="port of the webhook server (default: from --config)"
    )
    parser.add_argument(
        "--log-level", default="info", choices=("debug", "info", "warning", "error")
    )
    parser.set_defaults(handler=run_agent)


def valid_object_name(name: str) -> bool:
    return len(name) <= 253 and _OBJECT_NAME.fullmatch(name) is not None


def run_agent(args: argparse.Namespace) -> int:
    from cli.process_start import load_configuration_for

    configuration = load_configuration_for("fleetq agent", args.config, args.log_level)
    if configuration is None:
        return 2
    return asyncio.run(_serve(args, configuration))


async def _serve(args: argparse.Namespace, configuration: Any) -> int:
    from core.kube.client import KubeClient
    from core.kube.cluster_config import ClusterConfigError, load_cluster_config
    from core.manager.webhook_service import UrlRegistration
    from worker_agent.agent import Agent, AgentOptions

    try:
        cluster = await load_cluster_config(args.kubeconfig)
    except (ClusterConfigError, OSError) as error:
        print(f"fleetq agent: {error}", file=sys.stderr)
        return 2
    cluster_name = args.cluster_name or os.environ.get(CLUSTER_NAME_ENV) or cluster.name
    if not valid_object_name(cluster_name):
        print(
            f"fleetq agent: cluster name {cluster_name!r} cannot name a WorkerCapacity object "
            "(lowercase letters, digits, '-' and '.'); pass --cluster-name",
            file=sys.stderr,
        )
        return 2
    client = KubeClient(cluster, qps=configuration.client_qps, burst=configuration.client_burst)
    agent = Agent(
        configuration,
        client,
        AgentOptions(
            cluster_name=cluster_name,
            health_port=args.health_port,
            metrics_port=args.metrics_port,
            identity=args.identity or os.environ.get("POD_NAME", ""),
            lease_namespace=configuration.leader_election.resource_namespace
            or os.environ.get("POD_NAMESPACE")
            or None,
            lease_name=args.lease_name,
            webhooks=args.webhooks,
            webhook_port=args.webhook_port,
            webhook_registration=(
                UrlRegistration(args.webhook_url_host) if args.webhook_url_host else None
            ),
        ),
    )
    from cli.process_start import run_until_signalled

    return await run_until_signalled("fleetq agent", agent.run, client)

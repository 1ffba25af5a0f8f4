"""The JobSet controller (sigs.k8s.io/jobset) as the fleet runs it.

Its Configuration keeps leader election and internal certificate management off (the
latter would want a Service and a Secret in its namespace) and every server on loopback.
Its defaulting webhook matters — without it a JobSet lacks its success and startup
policies and its Jobs' Indexed completion mode — so readiness waits for a server-side
dry-run create to come back defaulted.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import yaml

from devfleet.operators.spec import WEBHOOK_HOST, Launch, Operator, OperatorError
from devfleet.toolchain import JOBSET_VERSION

if TYPE_CHECKING:
    from devfleet.operators.process import OperatorProcess

CONFIG_API_VERSION = "config.jobset.x-k8s.io/v1alpha1"
JOBSET_GROUP, JOBSET_API_VERSION = "jobset.x-k8s.io", "v1alpha2"

Json = dict[str, Any]


def controller_configuration(launch: Launch) -> Json:
    """The controller's Configuration (read with strict decoding: known fields only)."""
    return {
        "apiVersion": CONFIG_API_VERSION,
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "webhook": {
            "host": WEBHOOK_HOST,
            "port": launch.ports["webhook"],
            "certDir": str(launch.cert_dir),
        },
        "metrics": {"bindAddress": launch.address("metrics"), "certDir": str(launch.cert_dir)},
        "health": {"healthProbeBindAddress": launch.address("health")},
        "clientConnection": {"qps": launch.qps, "burst": launch.burst},
    }


def command(launch: Launch) -> list[str]:
    config = launch.workdir / "config.yaml"
    config.write_text(yaml.safe_dump(controller_configuration(launch), sort_keys=False))
    return [
        f"--config={config}",
        f"--kubeconfig={launch.kubeconfig}",
        "--zap-log-level=info",
        "--zap-encoder=console",
        "--zap-stacktrace-level=panic",
    ]


def probe_jobset(name: str) -> Json:
    """The smallest JobSet the validating webhook accepts: a dry-run create of it shows
    whether the defaulting webhook ran (nothing is stored)."""
    return {
        "apiVersion": f"{JOBSET_GROUP}/{JOBSET_API_VERSION}",
        "kind": "JobSet",
        "metadata": {"name": name},
        "spec": {
            "replicatedJobs": [
                {
                    "name": "probe",
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "template": {
                                "spec": {"containers": [{"name": "probe", "image": "probe"}]}
                            }
                        }
                    },
                }
            ]
        },
    }


def defaulted_by_webhook(jobset: Mapping[str, Any]) -> bool:
    """Fields only JobSet's defaulting webhook sets (the CRD schema defaults none of them)."""
    spec = jobset.get("spec") or {}
    jobs = spec.get("replicatedJobs") or []
    return (
        (spec.get("successPolicy") or {}).get("operator") == "All"
        and (spec.get("network") or {}).get("enableDNSHostnames") is True
        and bool(jobs)
        and all(
            ((job.get("template") or {}).get("spec") or {}).get("completionMode") == "Indexed"
            for job in jobs
        )
    )


def check_defaulting(process: OperatorProcess, timeout: float, namespace: str = "default") -> None:
    """Dry-run create a JobSet until it comes back defaulted by the webhook (the apiserver
    picks up new webhook configurations within a moment)."""
    from kubernetes import client, config

    probe = probe_jobset(f"fleetq-webhook-probe-{os.getpid()}")
    deadline = time.monotonic() + timeout
    last = ""
    with config.new_client_from_config(config_file=str(process.kubeconfig)) as api_client:
        api = client.CustomObjectsApi(api_client)
        while True:
            process.fail_if_exited()
            try:
                answer: Json = api.create_namespaced_custom_object(
                    JOBSET_GROUP, JOBSET_API_VERSION, namespace, "jobsets", probe, dry_run="All"
                )
                if defaulted_by_webhook(answer):
                    return
                last = f"not defaulted: {json.dumps(answer.get('spec'))[:300]}"
            except client.ApiException as exc:
                last = f"HTTP {exc.status}: {str(exc.body)[:300]}"
            if time.monotonic() >= deadline:
                raise OperatorError(
                    f"JobSet's defaulting webhook on {process.label} did not answer in "
                    f"{timeout:.0f}s ({last}); log {process.log_path}:\n{process.log_tail()}"
                )
            time.sleep(0.2)


JOBSET = Operator(
    name="jobset",
    title="the JobSet controller",
    tool="jobset",
    binary="jobset-controller",
    module="sigs.k8s.io/jobset",
    version=JOBSET_VERSION,
    command=command,
    crd_dirs=("config/components/crd/bases",),
    webhook_dir="config/components/webhook",
    check_ready=check_defaulting,
)

"""The JobSet controller (sigs.k8s.io/jobset) as the fleet runs it.

Its Configuration keeps leader election and internal certificate management off (the
latter would want a Service and a Secret in its namespace) and every server on loopback.
Its defaulting webhook matters — without it a JobSet lacks its success and startup
policies and its Jobs' Indexed completion mode — so readiness waits for a server-side
dry-run create to come back defaulted.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import yaml

from devfleet.operators.defaulting_probe import DefaultingProbe, wait_defaulted
from devfleet.operators.spec import WEBHOOK_HOST, Launch, Operator
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
    """Dry-run create a JobSet until it comes back defaulted by the webhook."""
    probe = probe_jobset(f"fleetq-webhook-probe-{os.getpid()}")
    wait_defaulted(
        process,
        timeout,
        DefaultingProbe(
            "JobSet", JOBSET_GROUP, JOBSET_API_VERSION, "jobsets", probe, defaulted_by_webhook
        ),
        namespace,
    )


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

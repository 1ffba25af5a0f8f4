"""What join writes on the manager: per worker a Secret and a MultiKueueCluster; per dispatch
config a MultiKueueConfig and the AdmissionCheck that names it. All upstream-shaped, so the
same objects serve fleetq's hub and upstream Kueue's MultiKueue manager alike, except for a
config of more than upstream's 20 workers: that one is a MultiKueueClusterSet
(fleetq.dev), which only fleetq's hub reads.

The Secret carries two annotations of fleetq's own: when its token expires (what `--rotate`
and `fleetq status` read, since upstream lets expired tokens fail silently) and whose token
it is (so a token of another identity is never mistaken for ours).
"""

from __future__ import annotations

import base64
from datetime import datetime

from cli.join.fleet_file import DispatchConfig, WorkerSpec
from cli.join.worker_identity import MANAGED_BY, MANAGED_BY_LABEL, Manifest
from core.api.groups import FLEETQ_API_VERSION, FLEETQ_GROUP, KUEUE_API_VERSION, KUEUE_GROUP
from core.api.kube_time import format_time
from core.api.multikueue import (
    KUBECONFIG_SECRET_KEY,
    MULTIKUEUE_CONFIG_KIND,
    MULTIKUEUE_CONTROLLER_NAME,
)
from core.api.multikueue_cluster_set import MULTIKUEUE_CLUSTER_SET_KIND

TOKEN_EXPIRY_ANNOTATION = "fleetq.dev/token-expires-at"
TOKEN_SUBJECT_ANNOTATION = "fleetq.dev/token-subject"
WORKER_LABEL = "fleetq.dev/worker"


def kubeconfig_secret_manifest(
    worker: WorkerSpec,
    namespace: str,
    kubeconfig_text: str,
    *,
    expires_at: datetime,
    subject: str,
) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": worker.secret_name,
            "namespace": namespace,
            "labels": {MANAGED_BY_LABEL: MANAGED_BY, WORKER_LABEL: worker.name},
            "annotations": {
                TOKEN_EXPIRY_ANNOTATION: format_time(expires_at),
                TOKEN_SUBJECT_ANNOTATION: subject,
            },
        },
        "type": "Opaque",
        "data": {KUBECONFIG_SECRET_KEY: base64.b64encode(kubeconfig_text.encode()).decode()},
    }


def secret_kubeconfig_text(secret: Manifest | None) -> str | None:
    """The kubeconfig stored in a Secret as returned by the apiserver, or None."""
    if not secret:
        return None
    encoded = (secret.get("data") or {}).get(KUBECONFIG_SECRET_KEY)
    if not encoded:
        return None
    try:
        return base64.b64decode(encoded).decode()
    except ValueError:
        return None


def multikueue_cluster_manifest(worker: WorkerSpec) -> Manifest:
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "MultiKueueCluster",
        "metadata": {"name": worker.name, "labels": {MANAGED_BY_LABEL: MANAGED_BY}},
        "spec": {
            "clusterSource": {
                "kubeConfig": {"location": worker.secret_name, "locationType": "Secret"}
            }
        },
    }


def cluster_list_manifest(config: DispatchConfig) -> Manifest:
    """The MultiKueueConfig, or past 20 workers the MultiKueueClusterSet, of a config."""
    _, api_version, kind = _cluster_list_kind(config)
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": config.name, "labels": {MANAGED_BY_LABEL: MANAGED_BY}},
        "spec": {"clusters": list(config.workers)},
    }


def admission_check_manifest(config: DispatchConfig) -> Manifest:
    group, _, kind = _cluster_list_kind(config)
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "AdmissionCheck",
        "metadata": {"name": config.admission_check, "labels": {MANAGED_BY_LABEL: MANAGED_BY}},
        "spec": {
            "controllerName": MULTIKUEUE_CONTROLLER_NAME,
            "parameters": {
                "apiGroup": group,
                "kind": kind,
                "name": config.name,
            },
        },
    }


def _cluster_list_kind(config: DispatchConfig) -> tuple[str, str, str]:
    """Group, apiVersion and kind of the object that lists the config's workers."""
    if config.uses_cluster_set:
        return FLEETQ_GROUP, FLEETQ_API_VERSION, MULTIKUEUE_CLUSTER_SET_KIND
    return KUEUE_GROUP, KUEUE_API_VERSION, MULTIKUEUE_CONFIG_KIND

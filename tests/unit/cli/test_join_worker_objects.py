"""What join creates on workers and on the manager: least privilege and upstream shapes."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from pathlib import Path

from cli.join.access_checks import manager_needs, worker_needs
from cli.join.fleet_file import (
    ClusterRef,
    DispatchConfig,
    FleetFile,
    IdentitySpec,
    ManagerSpec,
    MirroredNamespace,
    MirroredQueue,
    WorkerSpec,
)
from cli.join.manager_objects import (
    TOKEN_EXPIRY_ANNOTATION,
    TOKEN_SUBJECT_ANNOTATION,
    admission_check_manifest,
    cluster_list_manifest,
    kubeconfig_secret_manifest,
    multikueue_cluster_manifest,
    secret_kubeconfig_text,
)
from cli.join.queue_mirror import cluster_queues_named, mirror_manifests
from cli.join.worker_identity import (
    cluster_role_binding_manifest,
    cluster_role_manifest,
    identity_manifests,
)

IDENTITY = IdentitySpec(namespace="fleetq-system", service_account="fleetq-multikueue")
WORKER = WorkerSpec("gpu-east", ClusterRef("ctx"), "gpu-east-kubeconfig")
MIRROR = (
    MirroredNamespace("team-a", (MirroredQueue("gpu", "gpu-cq"), MirroredQueue("cpu", "cpu-cq"))),
    MirroredNamespace("team-b", (MirroredQueue("gpu", "gpu-cq"),)),
)


def granted(role: dict[str, object]) -> dict[tuple[str, str], set[str]]:
    """(group, resource) → verbs."""
    result: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:  # type: ignore[attr-defined]
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                result.setdefault((group, resource), set()).update(rule["verbs"])
    return result


def test_the_worker_role_grants_what_multikueue_uses_and_nothing_else() -> None:
    full = {"get", "list", "watch", "create", "update", "patch", "delete"}
    assert granted(cluster_role_manifest(IDENTITY)) == {
        ("kueue.x-k8s.io", "workloads"): full,
        ("kueue.x-k8s.io", "workloads/status"): full,
        ("batch", "jobs"): full,
        ("batch", "jobs/status"): full,
        ("jobset.x-k8s.io", "jobsets"): full,
        ("jobset.x-k8s.io", "jobsets/status"): full,
        ("ray.io", "rayjobs"): full,
        ("ray.io", "rayjobs/status"): full,
        ("ray.io", "rayclusters"): full,
        ("ray.io", "rayclusters/status"): full,
        ("ray.io", "rayservices"): full,
        ("ray.io", "rayservices/status"): full,
        ("trainer.kubeflow.org", "trainjobs"): full,
        ("trainer.kubeflow.org", "trainjobs/status"): full,
        **{
            ("kubeflow.org", resource): full
            for plural in (
                "pytorchjobs",
                "tfjobs",
                "xgboostjobs",
                "paddlejobs",
                "jaxjobs",
                "mpijobs",
            )
            for resource in (plural, f"{plural}/status")
        },
        ("", "events"): {"create"},
        ("events.k8s.io", "events"): {"create"},
        ("fleetq.dev", "workercapacities"): {"get", "list", "watch"},
        ("kueue.x-k8s.io", "localqueues"): {"get", "list"},
        ("kueue.x-k8s.io", "resourceflavors"): {"get"},
        ("kueue.x-k8s.io", "clusterqueues"): {"list"},
        # Pods, StatefulSets and LeaderWorkerSets are dispatched whole; the pods rule
        # for `fleetq logs` (get, list) is within the Pod kind's.
        ("", "pods"): full,
        ("", "pods/status"): full,
        ("apps", "statefulsets"): full,
        ("apps", "statefulsets/status"): full,
        ("leaderworkerset.x-k8s.io", "leaderworkersets"): full,
        ("leaderworkerset.x-k8s.io", "leaderworkersets/status"): full,
        ("", "pods/log"): {"get"},
    }


def test_the_worker_role_has_no_wildcards_and_no_secrets() -> None:
    rules = cluster_role_manifest(IDENTITY)["rules"]
    for rule in rules:
        assert "*" not in rule["apiGroups"] + rule["resources"] + rule["verbs"]
        assert "secrets" not in rule["resources"]
        assert "resourceNames" not in rule and "nonResourceURLs" not in rule


def test_the_binding_gives_the_role_to_the_service_account_only() -> None:
    binding = cluster_role_binding_manifest(IDENTITY)
    assert binding["metadata"]["name"] == "fleetq-system:fleetq-multikueue"
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "fleetq-system:fleetq-multikueue",
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "fleetq-multikueue", "namespace": "fleetq-system"}
    ]


def test_identity_objects_come_namespace_first_and_mount_no_token() -> None:
    kinds = [m["kind"] for m in identity_manifests(IDENTITY)]
    assert kinds == ["Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding"]
    account = identity_manifests(IDENTITY)[1]
    assert account["automountServiceAccountToken"] is False


def test_mirror_creates_each_namespace_before_its_local_queues() -> None:
    manifests = mirror_manifests(MIRROR)
    assert [
        (m["kind"], m["metadata"].get("namespace"), m["metadata"]["name"]) for m in manifests
    ] == [
        ("Namespace", None, "team-a"),
        ("LocalQueue", "team-a", "gpu"),
        ("LocalQueue", "team-a", "cpu"),
        ("Namespace", None, "team-b"),
        ("LocalQueue", "team-b", "gpu"),
    ]
    assert manifests[2]["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert manifests[2]["spec"] == {"clusterQueue": "cpu-cq"}
    assert cluster_queues_named(MIRROR) == ["cpu-cq", "gpu-cq"]


def test_manager_objects_have_upstreams_shape() -> None:
    assert multikueue_cluster_manifest(WORKER)["spec"] == {
        "clusterSource": {
            "kubeConfig": {"location": "gpu-east-kubeconfig", "locationType": "Secret"}
        }
    }
    config = DispatchConfig("fleet", "fleet-check", ("gpu-east", "cpu-west"))
    listed = cluster_list_manifest(config)
    assert (listed["apiVersion"], listed["kind"]) == ("kueue.x-k8s.io/v1beta2", "MultiKueueConfig")
    assert listed["spec"] == {"clusters": ["gpu-east", "cpu-west"]}
    check = admission_check_manifest(config)
    assert check["metadata"]["name"] == "fleet-check"
    assert check["spec"] == {
        "controllerName": "kueue.x-k8s.io/multikueue",
        "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "fleet"},
    }


def test_past_20_workers_the_check_names_a_fleetq_cluster_set() -> None:
    workers = tuple(f"w{index}" for index in range(21))
    config = DispatchConfig("fleet", "fleet-check", workers)
    listed = cluster_list_manifest(config)
    assert (listed["apiVersion"], listed["kind"]) == ("fleetq.dev/v1alpha1", "MultiKueueClusterSet")
    assert listed["spec"] == {"clusters": list(workers)}
    assert admission_check_manifest(config)["spec"]["parameters"] == {
        "apiGroup": "fleetq.dev",
        "kind": "MultiKueueClusterSet",
        "name": "fleet",
    }


def test_the_secret_holds_the_kubeconfig_under_upstreams_key_and_records_expiry() -> None:
    expires = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
    secret = kubeconfig_secret_manifest(
        WORKER, "hub-ns", "apiVersion: v1\n", expires_at=expires, subject=IDENTITY.subject
    )
    assert secret["metadata"]["namespace"] == "hub-ns"
    assert set(secret["data"]) == {"kubeconfig"}
    assert base64.b64decode(secret["data"]["kubeconfig"]) == b"apiVersion: v1\n"
    assert secret_kubeconfig_text(secret) == "apiVersion: v1\n"
    annotations = secret["metadata"]["annotations"]
    assert annotations[TOKEN_EXPIRY_ANNOTATION] == "2026-03-01T12:00:00Z"
    assert annotations[TOKEN_SUBJECT_ANNOTATION] == IDENTITY.subject


def test_the_permission_preflight_asks_for_each_verb_join_uses() -> None:
    fleet = FleetFile(
        Path("f.yaml"),
        ManagerSpec(ClusterRef("hub"), "hub-ns"),
        (WORKER,),
        IDENTITY,
        MIRROR,
    )
    worker = [need.describe() for need in worker_needs(fleet)]
    assert "create serviceaccounts/token in namespace fleetq-system" in worker
    assert "patch clusterroles.rbac.authorization.k8s.io" in worker
    assert "patch localqueues.kueue.x-k8s.io in namespace team-b" in worker
    manager = [need.describe() for need in manager_needs(fleet)]
    assert "patch secrets in namespace hub-ns" in manager
    assert "get multikueueclusters.kueue.x-k8s.io" in manager
    review = manager_needs(fleet)[2].review()
    assert review["spec"] == {
        "resourceAttributes": {
            "verb": "get",
            "group": "",
            "resource": "secrets",
            "namespace": "hub-ns",
        }
    }

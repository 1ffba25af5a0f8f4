"""The concurrent-admission controller's pure parts and the manifests' translation: a
variant is the parent's spec, owned by it, annotated with one flavor, named as upstream;
the engine reads the owner and the annotation back; a queue with several resource groups
gets a reason instead of variants."""

from __future__ import annotations

import pytest

from core.adapters.kueue_manifests import (
    ManifestError,
    cluster_queue_from_manifest,
    workload_from_manifest,
)
from core.api.cluster_queue import MigrationMode
from core.api.concurrent_admission import ALLOWED_FLAVORS_ANNOTATION, PARENT_LABEL
from core.manager.variant_controller import build_variant, policy_flavors, variant_name

PARENT = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "Workload",
    "metadata": {
        "name": "job-job-1a2b3",
        "namespace": "ns",
        "uid": "uid-1",
        "labels": {PARENT_LABEL: "true", "kueue.x-k8s.io/job-uid": "j1"},
        "annotations": {"a": "b"},
        "finalizers": ["kueue.x-k8s.io/resource-in-use"],
    },
    "spec": {
        "queueName": "main",
        "podSets": [
            {"name": "main", "count": 1, "template": {"spec": {"containers": []}}},
        ],
    },
}


def _queue(groups: int, policy: dict[str, object] | None) -> dict[str, object]:
    spec: dict[str, object] = {
        "resourceGroups": [
            {
                "coveredResources": ["cpu"],
                "flavors": [
                    {"name": f"f{g}{i}", "resources": [{"name": "cpu", "nominalQuota": "1"}]}
                    for i in range(2)
                ],
            }
            for g in range(groups)
        ]
    }
    if policy is not None:
        spec["concurrentAdmissionPolicy"] = policy
    return {"metadata": {"name": "cq"}, "spec": spec}


def test_a_variant_is_the_parents_spec_owned_by_it_with_one_flavor() -> None:
    variant = build_variant(PARENT, "spot")
    meta = variant["metadata"]
    assert meta["name"] == variant_name("job-job-1a2b3", "uid-1", "spot")
    assert meta["name"].startswith("job-job-variant-spot-")
    assert meta["annotations"] == {"a": "b", ALLOWED_FLAVORS_ANNOTATION: "spot"}
    assert PARENT_LABEL not in meta["labels"]
    assert "finalizers" not in meta
    (owner,) = meta["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "Workload",
        "job-job-1a2b3",
        "uid-1",
        True,
    )
    assert variant["spec"] == PARENT["spec"]
    assert variant["spec"] is not PARENT["spec"]


def test_the_engine_reads_a_variants_parent_and_flavor() -> None:
    workload = workload_from_manifest(build_variant(PARENT, "spot"))
    assert workload.variant_of == "ns/job-job-1a2b3"
    assert workload.allowed_flavors == ("spot",)
    parent = workload_from_manifest(PARENT)
    assert parent.variant_of is None and parent.allowed_flavors is None


def test_variant_names_are_short_and_differ_per_flavor() -> None:
    long_flavor = "x" * 80
    name = variant_name("job-" + "y" * 60 + "-abcde", "uid", long_flavor)
    assert len(name) <= 63
    assert variant_name("p-abcde", "uid", "a") != variant_name("p-abcde", "uid", "b")


def test_a_queue_with_several_resource_groups_gets_a_reason_not_variants() -> None:
    policy = {"migration": {"mode": "TryPreferredFlavors"}}
    assert policy_flavors(_queue(1, policy)) == (["f00", "f01"], None)
    flavors, problem = policy_flavors(_queue(2, policy))
    assert flavors is None and problem is not None and "exactly one resource group" in problem
    assert policy_flavors(_queue(1, None)) == (None, None)


def test_the_policy_reaches_the_engine_and_an_unknown_mode_is_named() -> None:
    cq = cluster_queue_from_manifest(
        _queue(
            1,
            {
                "migration": {
                    "mode": "RetainFirstAdmission",
                    "constraints": {"lastAcceptableFlavorName": "f01"},
                }
            },
        )
    )
    assert cq.concurrent_admission is not None
    assert cq.concurrent_admission.mode is MigrationMode.RETAIN_FIRST_ADMISSION
    assert cq.concurrent_admission.last_acceptable_flavor == "f01"
    assert cluster_queue_from_manifest(_queue(1, None)).concurrent_admission is None
    with pytest.raises(ManifestError, match="unknown mode"):
        cluster_queue_from_manifest(_queue(1, {"migration": {"mode": "Sometimes"}}))

"""Decoding and encoding API objects: exact round trips, defaults, lists, quantities."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from core.api.cluster_queue import (
    BorrowWithinCohortPolicy,
    ClusterQueue,
    FlavorFungibilityPolicy,
    PreemptionPolicy,
    QueueingStrategy,
    StopPolicy,
)
from core.api.codec import decode, decode_list, decode_manifest, deep_copy, encode, to_builtins
from core.api.fair_sharing import FairSharing
from core.api.local_queue import LocalQueue
from core.api.multikueue import LocationType, MultiKueueCluster
from core.api.quantity import Quantity
from core.api.registry import KINDS
from core.api.workload import Workload

MANIFESTS = Path(__file__).parent / "manifests"


def load(name: str) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((MANIFESTS / f"{name}.yaml").read_text())
    return document


MANIFEST_NAMES = sorted(path.stem for path in MANIFESTS.glob("*.yaml"))


def test_there_is_a_realistic_manifest_for_every_kind() -> None:
    kinds = {load(name)["kind"] for name in MANIFEST_NAMES}
    assert kinds == {info.kind for info in KINDS}


@pytest.mark.parametrize("name", MANIFEST_NAMES)
def test_manifest_survives_decode_and_encode_unchanged(name: str) -> None:
    manifest = load(name)
    obj = decode_manifest(manifest)
    assert json.loads(encode(obj)) == manifest
    assert to_builtins(obj) == manifest


@pytest.mark.parametrize("name", MANIFEST_NAMES)
def test_bytes_and_mapping_inputs_decode_to_the_same_object(name: str) -> None:
    manifest = load(name)
    from_mapping = decode(manifest["kind"], manifest)
    from_bytes = decode(type(from_mapping), json.dumps(manifest).encode())
    assert from_bytes == from_mapping


def test_minimal_cluster_queue_gets_upstream_defaults() -> None:
    cq = decode(ClusterQueue, {"metadata": {"name": "q"}, "spec": {}})
    spec = cq.spec
    assert spec.queueing_strategy is QueueingStrategy.BEST_EFFORT_FIFO
    assert spec.stop_policy is StopPolicy.NONE
    assert spec.flavor_fungibility.when_can_borrow is FlavorFungibilityPolicy.MAY_STOP_SEARCH
    assert spec.flavor_fungibility.when_can_preempt is FlavorFungibilityPolicy.TRY_NEXT_FLAVOR
    assert spec.preemption.reclaim_within_cohort is PreemptionPolicy.NEVER
    assert spec.preemption.within_cluster_queue is PreemptionPolicy.NEVER
    assert spec.preemption.borrow_within_cohort.policy is BorrowWithinCohortPolicy.NEVER
    assert spec.namespace_selector is None
    assert (cq.status.pending_workloads, cq.status.admitted_workloads) == (0, 0)


def test_minimal_workload_gets_upstream_defaults() -> None:
    wl = decode(Workload, {"spec": {"podSets": [{"template": {}}]}})
    assert wl.spec.active is True
    assert (wl.spec.pod_sets[0].name, wl.spec.pod_sets[0].count) == ("main", 1)


def test_other_upstream_defaults() -> None:
    assert decode(FairSharing, {}).weight == "1"
    assert decode(LocalQueue, {"spec": {}}).spec.stop_policy is StopPolicy.NONE
    cluster = decode(
        MultiKueueCluster, {"spec": {"clusterSource": {"kubeConfig": {"location": "s"}}}}
    )
    kube_config = cluster.spec.cluster_source.kube_config
    assert kube_config is not None and kube_config.location_type is LocationType.SECRET


def test_empty_namespace_selector_is_kept_distinct_from_none() -> None:
    cq = decode(ClusterQueue, {"spec": {"namespaceSelector": {}}})
    assert cq.spec.namespace_selector is not None
    assert json.loads(encode(cq))["spec"]["namespaceSelector"] == {}


def test_numeric_quantities_decode_as_text() -> None:
    cq = decode(
        ClusterQueue,
        b'{"spec":{"resourceGroups":[{"coveredResources":["cpu"],"flavors":[{"name":"f",'
        b'"resources":[{"name":"cpu","nominalQuota":8,"lendingLimit":2.5}]}]}]}}',
    )
    quota = cq.spec.resource_groups[0].flavors[0].resources[0]
    assert isinstance(quota.nominal_quota, Quantity)
    assert (quota.nominal_quota, quota.lending_limit) == ("8", "2.5")


def test_a_wrongly_typed_field_is_reported_with_its_path() -> None:
    with pytest.raises(msgspec.ValidationError, match=r"\$\.spec\.queueingStrategy"):
        decode(ClusterQueue, b'{"spec":{"queueingStrategy":"Random"}}')


def test_unknown_fields_are_skipped() -> None:
    cq = decode(ClusterQueue, {"spec": {"futureField": 1}, "metadata": {"managedFields": [{}]}})
    assert "futureField" not in json.dumps(to_builtins(cq))


def test_counters_and_required_values_are_written_even_when_zero() -> None:
    encoded = json.loads(encode(ClusterQueue()))
    assert encoded["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert encoded["kind"] == "ClusterQueue"
    assert encoded["status"] == {
        "pendingWorkloads": 0,
        "reservingWorkloads": 0,
        "admittedWorkloads": 0,
    }


def test_defaults_are_left_out_of_the_encoding() -> None:
    encoded = json.loads(encode(decode(Workload, {"spec": {"podSets": [{"template": {}}]}})))
    assert encoded["spec"] == {"podSets": [{}]}


def test_list_response_decodes_items_and_resource_version() -> None:
    body = json.dumps(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "WorkloadList",
            "metadata": {"resourceVersion": "42", "continue": "token"},
            "items": [load("workload"), load("workload")],
        }
    ).encode()
    result = decode_list("Workload", body)
    assert result.metadata.resource_version == "42"
    assert result.metadata.continue_token == "token"
    assert [item.metadata.name for item in result.items] == ["job-train-7c9d2"] * 2
    assert isinstance(result.items[0], Workload)


def test_deep_copy_is_independent() -> None:
    original = decode(Workload, load("workload"))
    copied = deep_copy(original)
    assert copied == original
    copied.spec.pod_sets[0].count = 99
    copied.metadata.labels["x"] = "y"
    assert original.spec.pod_sets[0].count == 1
    assert "x" not in original.metadata.labels


def test_mutable_defaults_are_not_shared_between_objects() -> None:
    first, second = Workload(), Workload()
    first.spec.pod_sets.append(decode("Workload", {"spec": {"podSets": [{}]}}).spec.pod_sets[0])
    first.metadata.labels["a"] = "b"
    assert second.spec.pod_sets == []
    assert second.metadata.labels == {}


def test_unknown_kind_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="ClusterQueue"):
        decode("Job", {})

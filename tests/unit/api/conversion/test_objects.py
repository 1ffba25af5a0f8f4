"""v1beta1 <-> v1beta2 conversions: field moves per kind, and round trips that keep fields."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from core.api.conversion.objects import ConversionError, convert_object
from core.api.conversion.preserved import PRESERVED_FIELDS_ANNOTATION
from core.api.conversion.versions import V1BETA1_API_VERSION as V1
from core.api.conversion.versions import V1BETA2_API_VERSION as V2


def obj(kind: str, api_version: str, **body: Any) -> dict[str, Any]:
    namespaced = kind in {"LocalQueue", "Workload"}
    metadata = {"name": "x", **({"namespace": "ns"} if namespaced else {})}
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, **body}


def to_v1(item: dict[str, Any]) -> dict[str, Any]:
    return convert_object(item, V1)


def to_v2(item: dict[str, Any]) -> dict[str, Any]:
    return convert_object(item, V2)


TOPOLOGY_V2 = {
    "levels": ["cloud.com/block", "kubernetes.io/hostname"],
    "slices": [
        {
            "domainCount": 3,
            "valuesPerLevel": [
                {"universal": "b1"},
                {"individual": {"prefix": "node-", "roots": ["1", "2", "3"]}},
            ],
            "podCounts": {"individual": [2, 1, 1]},
        }
    ],
}
TOPOLOGY_V1 = {
    "levels": ["cloud.com/block", "kubernetes.io/hostname"],
    "domains": [
        {"values": ["b1", "node-1"], "count": 2},
        {"values": ["b1", "node-2"], "count": 1},
        {"values": ["b1", "node-3"], "count": 1},
    ],
}

WORKLOAD_V2 = obj(
    "Workload",
    V2,
    spec={
        "queueName": "lq",
        "priority": 100,
        "priorityClassRef": {
            "group": "kueue.x-k8s.io",
            "kind": "WorkloadPriorityClass",
            "name": "high",
        },
        "preemptionGates": [{"name": "example.com/gate"}],
        "podSets": [
            {
                "name": "main",
                "count": 4,
                "template": {"spec": {"containers": [{"name": "c"}]}},
                "topologyRequest": {
                    "required": "cloud.com/block",
                    "podsetSliceRequiredTopologyConstraints": [
                        {"topology": "kubernetes.io/hostname", "size": 2}
                    ],
                },
            }
        ],
    },
    status={
        "accumulatedPastExecutionTimeSeconds": 30,
        "preemptionGates": [{"name": "example.com/gate", "position": "Open"}],
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [{"name": "main", "count": 4, "topologyAssignment": TOPOLOGY_V2}],
        },
    },
)

CLUSTER_QUEUE_V2 = obj(
    "ClusterQueue",
    V2,
    spec={
        "cohortName": "team",
        "admissionChecksStrategy": {"admissionChecks": [{"name": "mk"}]},
        "concurrentAdmissionPolicy": {"migration": {"mode": "TryPreferredFlavors"}},
        "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
    },
    status={"pendingWorkloads": 1},
)

ROUND_TRIPS = {
    "a Workload keeps its priority class, gates, slice constraints and placement": WORKLOAD_V2,
    "a ClusterQueue keeps its cohort, checks and concurrent admission policy": CLUSTER_QUEUE_V2,
    "a LocalQueue keeps its flavor usage": obj(
        "LocalQueue",
        V2,
        spec={"clusterQueue": "cq"},
        status={"flavorsUsage": [{"name": "f", "resources": [{"name": "cpu", "total": "1"}]}]},
    ),
    "a MultiKueueCluster keeps its kubeconfig source": obj(
        "MultiKueueCluster",
        V2,
        spec={"clusterSource": {"kubeConfig": {"location": "w1", "locationType": "Secret"}}},
    ),
    "a MultiKueueCluster keeps its cluster profile source": obj(
        "MultiKueueCluster", V2, spec={"clusterSource": {"clusterProfileRef": {"name": "p"}}}
    ),
    "a MultiKueueConfig keeps its quota management": obj(
        "MultiKueueConfig", V2, spec={"clusters": ["w1"], "quotaManagement": "Automated"}
    ),
    "a ResourceFlavor is only relabelled": obj(
        "ResourceFlavor", V2, spec={"nodeLabels": {"pool": "a"}}
    ),
    "a Cohort is only relabelled": obj("Cohort", V2, spec={"parentName": "root"}),
    "an AdmissionCheck is only relabelled": obj(
        "AdmissionCheck", V2, spec={"controllerName": "kueue.x-k8s.io/multikueue"}
    ),
}


@pytest.mark.parametrize("original", ROUND_TRIPS.values(), ids=ROUND_TRIPS.keys())
def test_v1beta2_round_trip_through_v1beta1_is_exact(original: dict[str, Any]) -> None:
    before = copy.deepcopy(original)
    v1 = to_v1(original)
    assert v1["apiVersion"] == V1
    assert to_v2(v1) == original
    assert original == before, "the input object must not be modified"


def test_workload_to_v1beta1_moves_every_renamed_field() -> None:
    v1 = to_v1(WORKLOAD_V2)
    assert v1["spec"]["priorityClassSource"] == "kueue.x-k8s.io/workloadpriorityclass"
    assert v1["spec"]["priorityClassName"] == "high"
    assert "priorityClassRef" not in v1["spec"]
    assert "preemptionGates" not in v1["spec"] and "preemptionGates" not in v1["status"]
    assert (
        "podsetSliceRequiredTopologyConstraints" not in v1["spec"]["podSets"][0]["topologyRequest"]
    )
    assert v1["status"]["accumulatedPastExexcutionTimeSeconds"] == 30
    assert "accumulatedPastExecutionTimeSeconds" not in v1["status"]
    assert v1["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"] == TOPOLOGY_V1
    stashed = orjson.loads(v1["metadata"]["annotations"][PRESERVED_FIELDS_ANNOTATION])
    assert set(stashed) == {
        "spec.preemptionGates",
        "status.preemptionGates",
        "spec.podSets[main].topologyRequest.podsetSliceRequiredTopologyConstraints",
    }


def test_v1beta1_workload_with_pod_priority_class_gets_a_pod_priority_ref() -> None:
    v1 = obj(
        "Workload",
        V1,
        spec={
            "priorityClassSource": "scheduling.k8s.io/priorityclass",
            "priorityClassName": "system-critical",
            "podSets": [],
        },
    )
    spec = to_v2(v1)["spec"]
    assert spec["priorityClassRef"] == {
        "group": "scheduling.k8s.io",
        "kind": "PriorityClass",
        "name": "system-critical",
    }
    assert "priorityClassSource" not in spec and "priorityClassName" not in spec


def test_v1beta1_workload_name_without_source_names_no_class() -> None:
    v1 = obj("Workload", V1, spec={"priorityClassSource": "", "priorityClassName": "high"})
    assert to_v2(v1)["spec"] == {}


def test_v1beta1_topology_domains_become_slices_that_decode_back() -> None:
    v1 = obj(
        "Workload",
        V1,
        status={"admission": {"podSetAssignments": [{"topologyAssignment": TOPOLOGY_V1}]}},
    )
    v2 = to_v2(v1)
    placement = v2["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
    assert "domains" not in placement and placement["slices"]
    assert to_v1(v2)["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"] == (
        TOPOLOGY_V1
    )


def test_v1beta1_cluster_queue_checks_cohort_and_retired_fungibility() -> None:
    v1 = obj(
        "ClusterQueue",
        V1,
        spec={
            "cohort": "team",
            "admissionChecks": ["prov", "mk"],
            "flavorFungibility": {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"},
        },
        status={
            "pendingWorkloadsStatus": {"lastChangeTime": "2026-01-01T00:00:00Z"},
            "fairSharing": {"weightedShare": 0, "admissionFairSharingStatus": {}},
        },
    )
    v2 = to_v2(v1)
    assert v2["spec"] == {
        "cohortName": "team",
        "admissionChecksStrategy": {"admissionChecks": [{"name": "prov"}, {"name": "mk"}]},
        "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"},
    }
    assert v2["status"] == {"fairSharing": {"weightedShare": 0}}


def test_cluster_queue_to_v1beta1_renames_cohort_and_stashes_the_policy() -> None:
    spec = to_v1(CLUSTER_QUEUE_V2)["spec"]
    assert spec["cohort"] == "team" and "cohortName" not in spec
    assert "concurrentAdmissionPolicy" not in spec
    assert spec["admissionChecksStrategy"] == {"admissionChecks": [{"name": "mk"}]}


def test_v1beta1_local_queue_flavor_usage_is_renamed_and_flavors_dropped() -> None:
    v1 = obj(
        "LocalQueue",
        V1,
        status={"flavorUsage": [{"name": "f", "resources": []}], "flavors": [{"name": "f"}]},
    )
    assert to_v2(v1)["status"] == {"flavorsUsage": [{"name": "f", "resources": []}]}


def test_v1beta1_multikueue_cluster_sources_move_under_cluster_source() -> None:
    v1 = obj("MultiKueueCluster", V1, spec={"kubeConfig": {"location": "w1"}})
    assert to_v2(v1)["spec"] == {"clusterSource": {"kubeConfig": {"location": "w1"}}}


def test_v1beta1_admission_check_retry_delay_is_dropped() -> None:
    v1 = obj("AdmissionCheck", V1, spec={"controllerName": "c", "retryDelayMinutes": 15})
    assert to_v2(v1)["spec"] == {"controllerName": "c"}


def test_v1beta1_cohort_admission_fair_sharing_status_is_dropped() -> None:
    v1 = obj(
        "Cohort", V1, status={"fairSharing": {"weightedShare": 1, "admissionFairSharingStatus": {}}}
    )
    assert to_v2(v1)["status"] == {"fairSharing": {"weightedShare": 1}}


def test_restoring_does_not_overwrite_what_the_v1beta1_writer_set() -> None:
    v1 = to_v1(WORKLOAD_V2)
    v1["spec"]["podSets"] = [{"name": "other", "count": 1}]
    v2 = to_v2(v1)
    assert v2["spec"]["podSets"] == [{"name": "other", "count": 1}], "gone pod set stays gone"
    assert v2["spec"]["preemptionGates"] == [{"name": "example.com/gate"}]
    assert "annotations" not in v2["metadata"]


def test_a_hand_edited_preservation_annotation_is_dropped() -> None:
    v1 = obj(
        "MultiKueueConfig",
        V1,
        spec={"clusters": []},
    )
    v1["metadata"]["annotations"] = {PRESERVED_FIELDS_ANNOTATION: "{not json", "keep": "me"}
    v2 = to_v2(v1)
    assert v2["metadata"]["annotations"] == {"keep": "me"}
    assert v2["spec"] == {"clusters": []}


def test_same_version_is_returned_unchanged() -> None:
    assert to_v2(WORKLOAD_V2) == WORKLOAD_V2


def test_unserved_versions_are_refused_with_the_object_named() -> None:
    with pytest.raises(
        ConversionError, match=r"ClusterQueue x: cannot convert 'kueue.x-k8s.io/v1alpha1'"
    ):
        to_v2(obj("ClusterQueue", "kueue.x-k8s.io/v1alpha1"))


def test_a_malformed_topology_assignment_is_a_conversion_error() -> None:
    broken = copy.deepcopy(WORKLOAD_V2)
    broken["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"] = {
        "levels": ["a"],
        "slices": [{"domainCount": 1, "valuesPerLevel": [], "podCounts": {"universal": 1}}],
    }
    with pytest.raises(ConversionError, match="Workload ns/x: valuesPerLevel"):
        to_v1(broken)

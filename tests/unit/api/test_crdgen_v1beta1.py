"""The v1beta1 versions of the hub's CRDs: served not stored, derived schemas, conversion."""

from __future__ import annotations

from typing import Any

import pytest

from core.api.conversion.versions import WEBHOOK_CONVERTED_KINDS
from core.api.crdgen.crd import crd_document
from core.api.crdgen.schema import SchemaError, root_schema
from core.api.crdgen.v1beta1 import remove, v1beta1_schema
from core.api.registry import BY_KIND, KINDS


def versions(kind: str) -> dict[str, dict[str, Any]]:
    crd = crd_document(BY_KIND[kind])
    return {version["name"]: version for version in crd["spec"]["versions"]}


def props(schema: dict[str, Any], *path: str) -> dict[str, Any]:
    node = schema
    for name in path:
        node = node["properties"][name]
        if node.get("type") == "array":
            node = node["items"]
    return node.get("properties", {})


def schema_of(kind: str, version: str) -> dict[str, Any]:
    return versions(kind)[version]["schema"]["openAPIV3Schema"]


KUEUE_KINDS = [info for info in KINDS if info.group == "kueue.x-k8s.io"]


def without_api_version(schema: dict[str, Any]) -> dict[str, Any]:
    return {**schema, "properties": {**schema["properties"], "apiVersion": None}}


@pytest.mark.parametrize("info", KUEUE_KINDS, ids=[info.kind for info in KUEUE_KINDS])
def test_every_kueue_kind_serves_v1beta1_without_storing_it(info: Any) -> None:
    served = versions(info.kind)
    assert (served["v1beta1"]["served"], served["v1beta1"]["storage"]) == (True, False)
    assert served["v1beta1"]["deprecated"] is True
    assert served["v1beta2"]["storage"] is True
    conversion = crd_document(info)["spec"].get("conversion")
    if info.kind in WEBHOOK_CONVERTED_KINDS:
        assert conversion["strategy"] == "Webhook"
        assert conversion["webhook"]["clientConfig"]["service"]["path"] == "/convert"
        assert conversion["webhook"]["conversionReviewVersions"] == ["v1"]
    else:
        assert conversion is None, "same schema: the apiserver converts by relabelling"
        assert without_api_version(served["v1beta1"]["schema"]["openAPIV3Schema"]) == (
            without_api_version(served["v1beta2"]["schema"]["openAPIV3Schema"])
        )


def test_fleetq_kinds_serve_one_version() -> None:
    assert list(versions("WorkerCapacity")) == ["v1alpha1"]
    assert "conversion" not in crd_document(BY_KIND["WorkerCapacity"])["spec"]


def test_cluster_queue_v1beta1_has_cohort_checks_and_retired_values() -> None:
    schema = schema_of("ClusterQueue", "v1beta1")
    spec = props(schema, "spec")
    assert "cohort" in spec and "cohortName" not in spec
    assert spec["admissionChecks"]["items"]["type"] == "string"
    assert "concurrentAdmissionPolicy" not in spec
    assert "Borrow" in spec["flavorFungibility"]["properties"]["whenCanBorrow"]["enum"]
    assert "Preempt" in spec["flavorFungibility"]["properties"]["whenCanPreempt"]["enum"]
    rules = [r["rule"] for r in schema["properties"]["spec"].get("x-kubernetes-validations", [])]
    assert rules and all("cohortName" not in rule for rule in rules)
    assert any("self.cohort)" in rule for rule in rules)
    assert "pendingWorkloadsStatus" in props(schema, "status")
    column = versions("ClusterQueue")["v1beta1"]["additionalPrinterColumns"][0]
    assert column["jsonPath"] == ".spec.cohort"


def test_workload_v1beta1_names_priority_and_lists_topology_domains() -> None:
    schema = schema_of("Workload", "v1beta1")
    spec = props(schema, "spec")
    assert {"priorityClassName", "priorityClassSource"} <= set(spec)
    assert "priorityClassRef" not in spec and "preemptionGates" not in spec
    assert spec["priorityClassSource"]["default"] == ""
    spec_rules = schema["properties"]["spec"]["x-kubernetes-validations"]
    assert "!has(self.priorityClassName) || has(self.priority)" in [r["rule"] for r in spec_rules]
    root_rules = [r["rule"] for r in schema["x-kubernetes-validations"]]
    assert not any("priorityClassRef" in rule for rule in root_rules)
    assert any(
        "oldSelf.spec.priorityClassSource == self.spec.priorityClassSource" in r for r in root_rules
    )
    assert "podsetSliceRequiredTopologyConstraints" not in props(
        schema, "spec", "podSets", "topologyRequest"
    )
    status = props(schema, "status")
    assert "accumulatedPastExexcutionTimeSeconds" in status
    placement = schema["properties"]["status"]["properties"]["admission"]["properties"][
        "podSetAssignments"
    ]["items"]["properties"]["topologyAssignment"]
    assert set(placement["properties"]) == {"levels", "domains"}
    assert placement["required"] == ["domains", "levels"]
    assert "x-kubernetes-validations" not in placement, "the slices rule went with slices"


def test_multikueue_cluster_v1beta1_has_sources_in_spec() -> None:
    spec = schema_of("MultiKueueCluster", "v1beta1")["properties"]["spec"]
    assert set(spec["properties"]) == {"kubeConfig", "clusterProfileRef"}
    assert "required" not in spec
    assert spec["x-kubernetes-validations"][0]["rule"] == (
        "has(self.kubeConfig) != has(self.clusterProfileRef)"
    )


def test_the_v1beta2_schema_is_not_modified() -> None:
    v1beta2 = root_schema(BY_KIND["Workload"].type)
    before = repr(v1beta2)
    v1beta1_schema("Workload", v1beta2)
    assert repr(v1beta2) == before


def test_an_edit_naming_a_missing_field_is_an_error() -> None:
    with pytest.raises(SchemaError, match="no property"):
        remove("spec.nothing.here")(root_schema(BY_KIND["Cohort"].type))

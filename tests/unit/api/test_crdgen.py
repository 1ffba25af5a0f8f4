"""The CRD generator: structural schemas, rules and defaults from the types, files current."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from core.api.crdgen.__main__ import main as crdgen_main
from core.api.crdgen.crd import crd_document
from core.api.crdgen.files import CHART_CRD_DIRS, HEADER, check, file_name, write
from core.api.crdgen.schema import SchemaError, root_schema, struct_schema
from core.api.quantity import QUANTITY_PATTERN
from core.api.registry import BY_KIND, KINDS, KindInfo

KIND_IDS = [info.kind for info in KINDS]


def nodes(schema: dict[str, Any], path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every schema node with its path."""
    found = [(path, schema)]
    for name, child in schema.get("properties", {}).items():
        found += nodes(child, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        found += nodes(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        found += nodes(schema["additionalProperties"], f"{path}{{}}")
    return found


@pytest.mark.parametrize("info", KINDS, ids=KIND_IDS)
def test_schema_is_structural(info: KindInfo) -> None:
    for path, node in nodes(root_schema(info.type)):
        if node.get("x-kubernetes-int-or-string"):
            assert node["anyOf"] == [{"type": "integer"}, {"type": "string"}], path
            assert "type" not in node, path
            continue
        assert "type" in node, f"{path} has no type"
        if node["type"] == "object":
            assert (
                "properties" in node
                or "additionalProperties" in node
                or node.get("x-kubernetes-preserve-unknown-fields")
                or path == ".metadata"
            ), path
            assert not ("properties" in node and "additionalProperties" in node), path
        if node["type"] == "array":
            assert "items" in node, path


@pytest.mark.parametrize("info", KINDS, ids=KIND_IDS)
def test_every_field_is_described_and_every_rule_explained(info: KindInfo) -> None:
    for path, node in nodes(root_schema(info.type)):
        is_item = path.endswith("[]") or path.endswith("{}")
        if path and not is_item and path != ".metadata":
            assert node.get("description"), f"{path} has no description"
        for rule in node.get("x-kubernetes-validations", []):
            assert rule["rule"] and rule["message"], path


@pytest.mark.parametrize("info", KINDS, ids=KIND_IDS)
def test_list_map_keys_are_required_or_defaulted(info: KindInfo) -> None:
    # The apiserver refuses map-type lists whose keys may be missing.
    for path, node in nodes(root_schema(info.type)):
        if node.get("x-kubernetes-list-type") != "map":
            continue
        item = node["items"]
        for key in node["x-kubernetes-list-map-keys"]:
            assert key in item.get("required", []) or "default" in item["properties"][key], (
                f"{path}: map key {key} neither required nor defaulted"
            )


def test_lists_and_strings_under_rules_are_bounded() -> None:
    # CEL cost estimates need bounds; every list in our schemas has maxItems except the
    # atomic label selectors (metav1's shape: a ClusterQueue's namespaceSelector, a
    # MultiKueueClusterSet's clusterSelector) and the lists of pod templates (unbounded
    # upstream too), which no rule reads.
    unbounded = [
        f"{info.kind}{path}"
        for info in KINDS
        for path, node in nodes(root_schema(info.type))
        if node.get("type") == "array" and "maxItems" not in node
    ]
    assert all(
        "namespaceSelector.matchExpressions" in path
        or "clusterSelector.matchExpressions" in path
        or ".template." in path
        for path in unbounded
    ), unbounded
    template = root_schema(BY_KIND["Workload"].type)["properties"]["spec"]["properties"]["podSets"][
        "items"
    ]["properties"]["template"]
    assert not [path for path, node in nodes(template) if "x-kubernetes-validations" in node]


def test_cluster_queue_schema_carries_upstream_defaults_enums_and_rules() -> None:
    spec = root_schema(BY_KIND["ClusterQueue"].type)["properties"]["spec"]
    props = spec["properties"]
    assert props["queueingStrategy"]["default"] == "BestEffortFIFO"
    assert props["queueingStrategy"]["enum"] == ["StrictFIFO", "BestEffortFIFO"]
    assert props["stopPolicy"]["default"] == "None"
    assert props["flavorFungibility"]["default"] == {}
    assert props["flavorFungibility"]["properties"]["whenCanPreempt"]["default"] == "TryNextFlavor"
    assert props["preemption"]["default"] == {}
    assert props["preemption"]["properties"]["withinClusterQueue"]["enum"] == [
        "Never",
        "LowerPriority",
        "LowerOrNewerEqualPriority",
    ]
    assert props["fairSharing"]["properties"]["weight"]["default"] == 1
    assert props["resourceGroups"]["maxItems"] == 16
    messages = [rule["message"] for rule in spec["x-kubernetes-validations"]]
    assert "a flavor may appear in only one resource group" in messages
    assert any(m.startswith("lendingLimit may only be set when cohortName") for m in messages)
    quota = props["resourceGroups"]["items"]["properties"]["flavors"]["items"]["properties"][
        "resources"
    ]["items"]
    assert quota["properties"]["nominalQuota"]["x-kubernetes-int-or-string"] is True
    assert "lendingLimit must be less than or equal to nominalQuota" in [
        rule["message"] for rule in quota["x-kubernetes-validations"]
    ]
    assert quota["required"] == ["name", "nominalQuota"]


def test_cohort_quotas_do_not_get_the_cluster_queue_only_rule() -> None:
    spec = root_schema(BY_KIND["Cohort"].type)["properties"]["spec"]
    quota = spec["properties"]["resourceGroups"]["items"]["properties"]["flavors"]["items"][
        "properties"
    ]["resources"]["items"]
    messages = [rule["message"] for rule in quota["x-kubernetes-validations"]]
    assert "lendingLimit must be less than or equal to nominalQuota" not in messages


def test_pod_templates_are_typed_where_fleetq_reads_them_and_pass_the_rest_through() -> None:
    spec = root_schema(BY_KIND["Workload"].type)["properties"]["spec"]
    template = spec["properties"]["podSets"]["items"]["properties"]["template"]
    # Upstream types template and spec as objects; a template that is not one is refused.
    assert template["type"] == "object" and template["description"]
    assert set(template["properties"]) == {"metadata", "spec"}
    assert "x-kubernetes-preserve-unknown-fields" not in template
    meta = template["properties"]["metadata"]
    assert set(meta["properties"]) == {"annotations", "finalizers", "labels", "name", "namespace"}
    pod = template["properties"]["spec"]
    assert pod["type"] == "object"
    assert pod["required"] == ["containers"]
    assert pod["x-kubernetes-preserve-unknown-fields"] is True
    containers = pod["properties"]["containers"]
    assert containers["x-kubernetes-list-type"] == "map"
    assert containers["x-kubernetes-list-map-keys"] == ["name"]
    container = containers["items"]
    assert container["required"] == ["name"]
    assert container["x-kubernetes-preserve-unknown-fields"] is True
    for group in ("containers", "initContainers"):
        resources = pod["properties"][group]["items"]["properties"]["resources"]["properties"]
        for field in ("requests", "limits"):
            quantity = resources[field]["additionalProperties"]
            assert quantity["x-kubernetes-int-or-string"] is True
            assert quantity["pattern"] == QUANTITY_PATTERN
    for field in ("overhead",):
        assert pod["properties"][field]["additionalProperties"]["pattern"] == QUANTITY_PATTERN
    pod_level = pod["properties"]["resources"]["properties"]["requests"]["additionalProperties"]
    assert pod_level["pattern"] == QUANTITY_PATTERN
    terms = pod["properties"]["affinity"]["properties"]["nodeAffinity"]["properties"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert terms["required"] == ["nodeSelectorTerms"]


def test_transition_rules_use_old_self() -> None:
    spec = root_schema(BY_KIND["LocalQueue"].type)["properties"]["spec"]
    rules = spec["properties"]["clusterQueue"]["x-kubernetes-validations"]
    assert rules == [
        {"rule": "self == oldSelf", "message": "clusterQueue cannot be changed once set"}
    ]


def test_crd_document_has_names_scope_subresource_and_columns() -> None:
    crd = crd_document(BY_KIND["Workload"])
    assert crd["metadata"]["name"] == "workloads.kueue.x-k8s.io"
    names = crd["spec"]["names"]
    assert names["shortNames"] == ["kwl", "kueueworkload", "kueueworkloads"]
    assert names["categories"] == ["kueue"]
    assert crd["spec"]["scope"] == "Namespaced"
    (version,) = crd["spec"]["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1beta2", True, True)
    assert version["subresources"] == {"status": {}}
    assert [c["name"] for c in version["additionalPrinterColumns"]] == [
        "Queue",
        "Reserved in",
        "Admitted",
        "Finished",
        "Age",
    ]
    flavor = crd_document(BY_KIND["ResourceFlavor"])
    assert flavor["spec"]["names"]["shortNames"] == ["flavor", "flavors", "rf"]
    assert "subresources" not in flavor["spec"]["versions"][0]
    capacity = crd_document(BY_KIND["WorkerCapacity"])
    assert capacity["spec"]["group"] == "fleetq.dev"
    assert capacity["spec"]["versions"][0]["name"] == "v1alpha1"


def test_unsupported_types_are_refused() -> None:
    import msgspec

    class Odd(msgspec.Struct):
        value: complex

    with pytest.raises(SchemaError):
        struct_schema(Odd)  # type: ignore[arg-type]


def test_committed_crd_files_are_current() -> None:
    assert check() == []
    assert crdgen_main(["--check"]) == 0


def test_check_reports_edited_missing_and_stale_files(tmp_path: Path) -> None:
    write(tmp_path)
    assert check(tmp_path) == []
    hub = tmp_path / CHART_CRD_DIRS[0]
    edited = hub / file_name(BY_KIND["ClusterQueue"])
    edited.write_text(edited.read_text().replace("BestEffortFIFO", "StrictFIFO"))
    (hub / file_name(BY_KIND["Cohort"])).unlink()
    (hub / "old.yaml").write_text(HEADER + "kind: Gone\n")
    problems = check(tmp_path)
    assert any(p.startswith("out of date:") and "clusterqueues" in p for p in problems)
    assert any(p.startswith("missing:") and "cohorts" in p for p in problems)
    assert any(p.startswith("stale") and "old.yaml" in p for p in problems)
    assert crdgen_main(["--check", "--root", str(tmp_path)]) == 1
    assert crdgen_main(["--root", str(tmp_path)]) == 0
    assert check(tmp_path) == []


def test_generated_files_parse_as_crds(tmp_path: Path) -> None:
    write(tmp_path)
    for directory in CHART_CRD_DIRS:
        files = sorted((tmp_path / directory).glob("*.yaml"))
        assert len(files) == len(KINDS)
        for path in files:
            text = path.read_text()
            assert text.startswith(HEADER)
            document = yaml.safe_load(text)
            assert document["kind"] == "CustomResourceDefinition"

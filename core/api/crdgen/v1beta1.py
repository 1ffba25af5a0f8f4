"""The v1beta1 schema of each kueue kind, derived from its v1beta2 schema.

v1beta1 is v1beta2 with a handful of fields renamed, moved, or only in one of them
(`core.api.conversion` converts the objects the same way), so its schema is the v1beta2
schema with those edits: one list of `Edit`s per kind. Fields only v1beta1 has are typed
in `core.api.v1beta1_fields`. CEL rules follow renamed fields.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Final

from core.api.crdgen.schema import Schema, SchemaError, struct_schema, type_schema
from core.api.fair_sharing import LocalQueueAdmissionFairSharingStatus
from core.api.markers import DNS1123_SUBDOMAIN, Rule, doc
from core.api.v1beta1_fields import (
    PRIORITY_NEEDS_VALUE,
    WORKLOAD_PRIORITY_RULES,
    ClusterQueuePendingWorkloadsStatus,
    LocalQueueFlavorStatus,
    PriorityClassSource,
    RetryDelay,
    TopologyDomainAssignment,
)

Edit = Callable[[Schema], None]


def _node(schema: Schema, dotted: str) -> Schema:
    """The schema at a dotted property path; `[]` steps into list items."""
    node = schema
    for name in dotted.split(".") if dotted else ():
        if name == "[]":
            node = node["items"]
            continue
        try:
            node = node["properties"][name]
        except KeyError:
            raise SchemaError(f"v1beta1 edit: no property {name!r} in {dotted!r}") from None
    return node


def _split(path: str) -> tuple[str, str]:
    parent, _, name = path.replace("[]", ".[]").rpartition(".")
    return parent, name


def rename(path: str, new: str) -> Edit:
    def edit(schema: Schema) -> None:
        parent_path, old = _split(path)
        parent = _node(schema, parent_path)
        parent["properties"] = {
            (new if key == old else key): value for key, value in parent["properties"].items()
        }
        if old in parent.get("required", ()):
            parent["required"] = sorted(new if key == old else key for key in parent["required"])

    return edit


def remove(path: str) -> Edit:
    """Drop the field, and the parent's rules that mention it (they could not compile)."""

    def edit(schema: Schema) -> None:
        parent_path, name = _split(path)
        parent = _node(schema, parent_path)
        del parent["properties"][name]
        if name in parent.get("required", ()):
            parent["required"] = [key for key in parent["required"] if key != name]
            if not parent["required"]:
                del parent["required"]
        mentions = re.compile(rf"\b{re.escape(name)}\b")
        rules = [
            rule
            for rule in parent.get("x-kubernetes-validations", ())
            if not mentions.search(rule["rule"])
        ]
        if rules:
            parent["x-kubernetes-validations"] = rules
        else:
            parent.pop("x-kubernetes-validations", None)

    return edit


def add(path: str, node: Schema, *, required: bool = False) -> Edit:
    def edit(schema: Schema) -> None:
        parent_path, name = _split(path)
        parent = _node(schema, parent_path)
        parent["properties"][name] = copy.deepcopy(node)
        if required:
            parent["required"] = sorted({*parent.get("required", ()), name})

    return edit


def allow_values(path: str, *values: str) -> Edit:
    def edit(schema: Schema) -> None:
        node = _node(schema, path)
        node["enum"] = [*node["enum"], *values]

    return edit


def hoist(path: str) -> Edit:
    """Replace the object at `path` by its properties (and rules) in its parent."""

    def edit(schema: Schema) -> None:
        parent_path, name = _split(path)
        parent = _node(schema, parent_path)
        inner = parent["properties"].pop(name)
        parent["properties"].update(inner.get("properties", {}))
        if name in parent.get("required", ()):
            parent["required"] = [key for key in parent["required"] if key != name]
            if not parent["required"]:
                del parent["required"]
        rules = inner.get("x-kubernetes-validations")
        if rules:
            parent.setdefault("x-kubernetes-validations", []).extend(rules)

    return edit


def replace_rules(path: str, mentioning: str, rules: tuple[Rule, ...]) -> Edit:
    """Swap the rules at `path` whose text contains `mentioning` for `rules`."""

    def edit(schema: Schema) -> None:
        node = _node(schema, path)
        kept = [r for r in node.get("x-kubernetes-validations", ()) if mentioning not in r["rule"]]
        node["x-kubernetes-validations"] = kept + [
            {"rule": rule.rule, "message": rule.message} for rule in rules
        ]

    return edit


def _description(text: str) -> Callable[[Schema], Schema]:
    def described(node: Schema) -> Schema:
        node["description"] = text
        return node

    return described


_ADMISSION_CHECKS = type_schema(
    Annotated[
        list[str],
        doc(
            "Names of the admission checks every workload needs (v1beta2:"
            " admissionChecksStrategy).",
            item_max_length=316,
        ),
    ]
)
_ADMISSION_FAIR_SHARING = _description("Not reported; v1beta2 keeps this on LocalQueues only.")(
    struct_schema(LocalQueueAdmissionFairSharingStatus)
)
_PRIORITY_CLASS_NAME = type_schema(
    Annotated[
        str,
        doc(
            "Name of the priority class (v1beta2: priorityClassRef.name).",
            max_length=253,
            pattern=DNS1123_SUBDOMAIN,
        ),
    ]
)
_PRIORITY_CLASS_SOURCE = {
    **type_schema(
        Annotated[
            PriorityClassSource,
            doc("Kind of priority class priorityClassName names (v1beta2: priorityClassRef)."),
        ]
    ),
    "default": "",
}
_TOPOLOGY_DOMAINS = type_schema(
    Annotated[
        list[TopologyDomainAssignment], doc("The domains and their pods (v1beta2 stores slices).")
    ]
)

EDITS: Final[Mapping[str, tuple[Edit, ...]]] = {
    "AdmissionCheck": (
        add("spec.retryDelayMinutes", struct_schema(RetryDelay)["properties"]["retryDelayMinutes"]),
    ),
    "ClusterQueue": (
        rename("spec.cohortName", "cohort"),
        add("spec.admissionChecks", _ADMISSION_CHECKS),
        remove("spec.concurrentAdmissionPolicy"),
        allow_values("spec.flavorFungibility.whenCanBorrow", "Borrow"),
        allow_values("spec.flavorFungibility.whenCanPreempt", "Preempt"),
        add("status.pendingWorkloadsStatus", struct_schema(ClusterQueuePendingWorkloadsStatus)),
        add("status.fairSharing.admissionFairSharingStatus", _ADMISSION_FAIR_SHARING),
    ),
    "Cohort": (add("status.fairSharing.admissionFairSharingStatus", _ADMISSION_FAIR_SHARING),),
    "LocalQueue": (
        rename("status.flavorsUsage", "flavorUsage"),
        add(
            "status.flavors",
            type_schema(
                Annotated[
                    list[LocalQueueFlavorStatus],
                    doc(
                        "Not reported by fleetq (removed in v1beta2).",
                        max_items=64,
                        list_type="map",
                        list_map_keys=("name",),
                    ),
                ]
            ),
        ),
    ),
    "MultiKueueCluster": (hoist("spec.clusterSource"),),
    "MultiKueueConfig": (remove("spec.quotaManagement"),),
    "Workload": (
        remove("spec.podSets[].topologyRequest.podsetSliceRequiredTopologyConstraints"),
        remove("spec.preemptionGates"),
        remove("status.preemptionGates"),
        remove("spec.priorityClassRef"),
        replace_rules("", "priorityClassRef.", WORKLOAD_PRIORITY_RULES),
        add("spec.priorityClassName", _PRIORITY_CLASS_NAME),
        replace_rules("spec", "priorityClassName", (PRIORITY_NEEDS_VALUE,)),
        add("spec.priorityClassSource", _PRIORITY_CLASS_SOURCE),
        rename(
            "status.accumulatedPastExecutionTimeSeconds", "accumulatedPastExexcutionTimeSeconds"
        ),
        remove("status.admission.podSetAssignments[].topologyAssignment.slices"),
        add(
            "status.admission.podSetAssignments[].topologyAssignment.domains",
            _TOPOLOGY_DOMAINS,
            required=True,
        ),
    ),
}
"""Per kind: the edits that turn its v1beta2 schema into its v1beta1 schema."""


@dataclass(frozen=True, slots=True)
class RuleRename:
    """A field name CEL rules use that v1beta1 spells differently."""

    v1beta2: str
    v1beta1: str


RULE_RENAMES: Final[Mapping[str, tuple[RuleRename, ...]]] = {
    "ClusterQueue": (RuleRename("cohortName", "cohort"),),
    "Workload": (RuleRename("priorityClassRef", "priorityClassName"),),
}

COLUMN_RENAMES: Final[Mapping[str, Mapping[str, str]]] = {
    "ClusterQueue": {".spec.cohortName": ".spec.cohort"},
}
"""Printer-column paths that differ in v1beta1."""


def _rename_in_rules(node: Any, renames: tuple[RuleRename, ...]) -> None:
    if isinstance(node, dict):
        for rule in node.get("x-kubernetes-validations", ()):
            for rename_ in renames:
                pattern = rf"\b{re.escape(rename_.v1beta2)}\b"
                rule["rule"] = re.sub(pattern, rename_.v1beta1, rule["rule"])
                rule["message"] = re.sub(pattern, rename_.v1beta1, rule["message"])
        for value in node.values():
            _rename_in_rules(value, renames)
    elif isinstance(node, list):
        for value in node:
            _rename_in_rules(value, renames)


def v1beta1_schema(kind: str, v1beta2: Schema) -> Schema:
    """The v1beta1 openAPIV3Schema of `kind`, given its v1beta2 schema (not modified)."""
    schema = copy.deepcopy(v1beta2)
    for edit in EDITS.get(kind, ()):
        edit(schema)
    _rename_in_rules(schema, RULE_RENAMES.get(kind, ()))
    schema["properties"]["apiVersion"]["description"] = (
        "Versioned schema of this object, e.g. kueue.x-k8s.io/v1beta1."
    )
    return schema


def v1beta1_column_path(kind: str, json_path: str) -> str:
    return COLUMN_RENAMES.get(kind, {}).get(json_path, json_path)

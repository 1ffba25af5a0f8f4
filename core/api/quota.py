"""Quota declarations shared by ClusterQueues and Cohorts: resource groups of flavors.

A resource group says "these resources (cpu, memory...) are provided together by these
flavors", and each flavor lists a quota for every covered resource, in the same order.
"""

from __future__ import annotations

from typing import Annotated, ClassVar

from core.api.api_struct import ApiStruct
from core.api.markers import (
    ResourceFlavorReference,
    ResourceName,
    Rule,
    SchemaMarkers,
    always,
    doc,
)
from core.api.quantity import Quantity

MAX_RESOURCE_GROUPS = 16
MAX_FLAVORS_PER_GROUP = 64
MAX_RESOURCES_PER_GROUP = 64
MAX_TOTAL_FLAVORS = 256
MAX_TOTAL_COVERED_RESOURCES = 256


def _non_negative(field: str) -> Rule:
    value = f"string(self.{field})"
    return Rule(
        f"!has(self.{field}) || !isQuantity({value})"
        f" || !quantity({value}).isLessThan(quantity('0'))",
        f"{field} must not be negative",
        field_path=f".{field}",
    )


class ResourceQuota(ApiStruct):
    """Quota of one resource within one flavor."""

    schema_markers: ClassVar[SchemaMarkers] = {
        "rules": (
            _non_negative("nominalQuota"),
            _non_negative("borrowingLimit"),
            _non_negative("lendingLimit"),
        )
    }

    name: Annotated[ResourceName, doc("Resource name, e.g. cpu or nvidia.com/gpu.", required=True)]
    nominal_quota: Annotated[
        Quantity,
        doc(
            "Amount of the resource this queue owns; it lends what it does not use.",
            required=True,
        ),
    ] = always(Quantity("0"))
    borrowing_limit: Annotated[
        Quantity | None,
        doc("Most this queue may borrow from its cohort; unset means no limit."),
    ] = None
    lending_limit: Annotated[
        Quantity | None,
        doc("Most of the unused quota that others in the cohort may borrow; unset means all."),
    ] = None


class FlavorQuotas(ApiStruct):
    """Quotas a ResourceFlavor provides for each resource of its group."""

    name: Annotated[ResourceFlavorReference, doc("Name of the ResourceFlavor.", required=True)]
    resources: Annotated[
        list[ResourceQuota],
        doc(
            "One quota per covered resource, in the order of coveredResources.",
            required=True,
            min_items=1,
            max_items=MAX_RESOURCES_PER_GROUP,
            list_type="map",
            list_map_keys=("name",),
        ),
    ] = []


class ResourceGroup(ApiStruct):
    """Resources that are provided together, and the flavors that provide them."""

    schema_markers: ClassVar[SchemaMarkers] = {
        "rules": (
            Rule(
                "self.flavors.all(f, f.resources.map(r, r.name) == self.coveredResources)",
                "each flavor must list exactly the group's coveredResources, in the same order",
                field_path=".flavors",
            ),
        )
    }

    covered_resources: Annotated[
        list[ResourceName],
        doc(
            "Resources whose quota this group defines (e.g. cpu, memory).",
            required=True,
            min_items=1,
            max_items=MAX_RESOURCES_PER_GROUP,
            list_type="atomic",
        ),
    ] = []
    flavors: Annotated[
        list[FlavorQuotas],
        doc(
            "Flavors that provide the covered resources, in order of preference.",
            required=True,
            min_items=1,
            max_items=MAX_FLAVORS_PER_GROUP,
            list_type="map",
            list_map_keys=("name",),
        ),
    ] = []


def _each_quota(condition: str) -> str:
    return "self.resourceGroups.all(rg, rg.flavors.all(f, f.resources.all(r, " + condition + ")))"


def resource_group_rules(owner_field: str, owner_label: str) -> tuple[Rule, ...]:
    """Spec-level rules over all resource groups of a ClusterQueue or a Cohort.

    `owner_field` is the field that must be set for limits to make sense (cohortName for a
    ClusterQueue, parentName for a Cohort).
    """
    no_owner = f"!has(self.{owner_field}) && has(self.resourceGroups)"
    names = "self.resourceGroups.map(rg, rg.flavors.map(f, f.name))"
    resources = "self.resourceGroups.map(rg, rg.coveredResources)"
    return (
        Rule(
            f"{no_owner} ? {_each_quota('!has(r.borrowingLimit)')} : true",
            f"borrowingLimit may only be set when {owner_field} is set ({owner_label})",
            field_path=".resourceGroups",
        ),
        Rule(
            f"{no_owner} ? {_each_quota('!has(r.lendingLimit)')} : true",
            f"lendingLimit may only be set when {owner_field} is set ({owner_label})",
            field_path=".resourceGroups",
        ),
        Rule(
            f"!has(self.resourceGroups) || {names}.flatten().size()"
            f" == {names}.flatten().distinct().size()",
            "a flavor may appear in only one resource group",
            field_path=".resourceGroups",
        ),
        Rule(
            f"!has(self.resourceGroups) || {resources}.flatten().size()"
            f" == {resources}.flatten().distinct().size()",
            "a resource may be covered by only one resource group",
            field_path=".resourceGroups",
        ),
        Rule(
            f"!has(self.resourceGroups) || {names}.flatten().size() <= {MAX_TOTAL_FLAVORS}",
            f"at most {MAX_TOTAL_FLAVORS} flavors in total across resource groups",
            field_path=".resourceGroups",
        ),
        Rule(
            f"!has(self.resourceGroups) || {resources}.flatten().size()"
            f" <= {MAX_TOTAL_COVERED_RESOURCES}",
            f"at most {MAX_TOTAL_COVERED_RESOURCES} covered resources in total across"
            " resource groups",
            field_path=".resourceGroups",
        ),
    )

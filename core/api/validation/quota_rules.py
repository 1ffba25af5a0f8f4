"""Rules over resource groups, shared by ClusterQueues and Cohorts.

Mirrors the CEL rules generated from `core.api.quota` and upstream's webhook checks:
flavors and resources appear in one group only, every flavor lists exactly the group's
resources in order, quantities are non-negative, and limits need a parent to apply to.
"""

from __future__ import annotations

from core.api.fair_sharing import FairSharing
from core.api.quantity import is_quantity, parse_quantity
from core.api.quota import (
    MAX_RESOURCES_PER_GROUP,
    MAX_TOTAL_COVERED_RESOURCES,
    MAX_TOTAL_FLAVORS,
    ResourceGroup,
)
from core.api.validation.field_errors import (
    FieldError,
    FieldPath,
    duplicate,
    forbidden,
    invalid,
    too_many,
)
from core.api.validation.labels import validate_qualified_name

MAX_FLAVOR_RESOURCE_COMBINATIONS = MAX_RESOURCES_PER_GROUP * 8


def validate_resource_groups(
    groups: list[ResourceGroup],
    path: FieldPath,
    *,
    parent_field: str,
    has_parent: bool,
    lending_within_nominal: bool,
) -> list[FieldError]:
    """Check a spec's resource groups.

    `parent_field` names what must be set for limits to apply (cohortName or parentName);
    `lending_within_nominal` enforces lendingLimit <= nominalQuota (ClusterQueues only).
    """
    errors: list[FieldError] = []
    flavor_group: dict[str, int] = {}
    resource_group: dict[str, int] = {}
    for g, group in enumerate(groups):
        group_path = path.index(g)
        for r, resource in enumerate(group.covered_resources):
            resource_path = group_path.child("coveredResources").index(r)
            errors.extend(validate_qualified_name(resource, resource_path))
            if resource in resource_group:
                errors.append(
                    duplicate(
                        resource_path,
                        f"resource {resource!r} is already covered by"
                        f" resourceGroups[{resource_group[resource]}]",
                    )
                )
            else:
                resource_group[resource] = g
        for f, flavor in enumerate(group.flavors):
            flavor_path = group_path.child("flavors").index(f)
            if flavor.name in flavor_group and flavor_group[flavor.name] != g:
                errors.append(
                    duplicate(
                        flavor_path.child("name"),
                        f"flavor {flavor.name!r} already appears in"
                        f" resourceGroups[{flavor_group[flavor.name]}]",
                    )
                )
            flavor_group.setdefault(flavor.name, g)
            listed = [quota.name for quota in flavor.resources]
            if listed != group.covered_resources:
                errors.append(
                    invalid(
                        flavor_path.child("resources"),
                        f"must list the group's coveredResources {group.covered_resources}"
                        f" in that order, got {listed}",
                    )
                )
            for q, quota in enumerate(flavor.resources):
                quota_path = flavor_path.child("resources").index(q)
                errors.extend(_non_negative(quota.nominal_quota, quota_path.child("nominalQuota")))
                for field, limit in (
                    ("borrowingLimit", quota.borrowing_limit),
                    ("lendingLimit", quota.lending_limit),
                ):
                    if limit is None:
                        continue
                    errors.extend(_non_negative(limit, quota_path.child(field)))
                    if not has_parent:
                        errors.append(
                            forbidden(
                                quota_path.child(field),
                                f"may only be set when {parent_field} is set",
                            )
                        )
                if (
                    lending_within_nominal
                    and quota.lending_limit is not None
                    and is_quantity(quota.lending_limit)
                    and is_quantity(quota.nominal_quota)
                    and parse_quantity(quota.lending_limit) > parse_quantity(quota.nominal_quota)
                ):
                    errors.append(
                        invalid(
                            quota_path.child("lendingLimit"),
                            f"{quota.lending_limit} must be less than or equal to nominalQuota"
                            f" ({quota.nominal_quota})",
                        )
                    )
        combinations = sum(len(flavor.resources) for flavor in group.flavors)
        if combinations > MAX_FLAVOR_RESOURCE_COMBINATIONS:
            errors.append(
                too_many(
                    group_path,
                    f"at most {MAX_FLAVOR_RESOURCE_COMBINATIONS} flavor-resource combinations"
                    f" per group, got {combinations}",
                )
            )
    total_flavors = sum(len(group.flavors) for group in groups)
    if total_flavors > MAX_TOTAL_FLAVORS:
        errors.append(
            too_many(path, f"at most {MAX_TOTAL_FLAVORS} flavors in total, got {total_flavors}")
        )
    total_resources = sum(len(group.covered_resources) for group in groups)
    if total_resources > MAX_TOTAL_COVERED_RESOURCES:
        errors.append(
            too_many(
                path,
                f"at most {MAX_TOTAL_COVERED_RESOURCES} covered resources in total,"
                f" got {total_resources}",
            )
        )
    return errors


def _non_negative(text: str, path: FieldPath) -> list[FieldError]:
    if is_quantity(text) and parse_quantity(text) < 0:
        return [invalid(path, f"{text} must not be negative")]
    return []


def validate_fair_sharing(fair_sharing: FairSharing | None, path: FieldPath) -> list[FieldError]:
    """Weight must be zero or above one nano-unit (smaller weights collapse to zero)."""
    if fair_sharing is None or not is_quantity(fair_sharing.weight):
        return []
    weight = parse_quantity(fair_sharing.weight)
    weight_path = path.child("weight")
    if weight < 0:
        return [invalid(weight_path, f"{fair_sharing.weight} must not be negative")]
    if 0 < weight <= parse_quantity("1n"):
        return [invalid(weight_path, f"{fair_sharing.weight}: when not 0, must be above 1n")]
    return []

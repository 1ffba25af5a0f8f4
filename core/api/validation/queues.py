"""Cross-field rules of ClusterQueues, Cohorts and LocalQueues."""

from __future__ import annotations

from core.api.cluster_queue import (
    BorrowWithinCohortPolicy,
    ClusterQueue,
    FlavorFungibilityPolicy,
    MigrationMode,
    PreemptionPolicy,
    QueueingStrategy,
)
from core.api.cohort import Cohort
from core.api.local_queue import LocalQueue
from core.api.validation.field_errors import ROOT, FieldError, forbidden, invalid, too_many
from core.api.validation.labels import validate_label_selector
from core.api.validation.quota_rules import validate_fair_sharing, validate_resource_groups


def validate_cluster_queue(cq: ClusterQueue) -> list[FieldError]:
    spec = cq.spec
    path = ROOT.child("spec")
    errors = validate_resource_groups(
        spec.resource_groups,
        path.child("resourceGroups"),
        parent_field="cohortName",
        has_parent=bool(spec.cohort_name),
        lending_within_nominal=True,
    )
    errors += validate_label_selector(spec.namespace_selector, path.child("namespaceSelector"))
    preemption = spec.preemption
    if (
        preemption.reclaim_within_cohort is PreemptionPolicy.NEVER
        and preemption.borrow_within_cohort.policy is not BorrowWithinCohortPolicy.NEVER
    ):
        errors.append(
            invalid(
                path.child("preemption", "borrowWithinCohort", "policy"),
                "must be Never when reclaimWithinCohort is Never",
            )
        )
    fungibility = spec.flavor_fungibility
    if fungibility.preference is not None and not (
        fungibility.when_can_borrow is FlavorFungibilityPolicy.TRY_NEXT_FLAVOR
        and fungibility.when_can_preempt is FlavorFungibilityPolicy.TRY_NEXT_FLAVOR
    ):
        errors.append(
            invalid(
                path.child("flavorFungibility", "preference"),
                f"{fungibility.preference} requires whenCanBorrow and whenCanPreempt to both"
                " be TryNextFlavor",
            )
        )
    errors += validate_fair_sharing(spec.fair_sharing, path.child("fairSharing"))
    return errors


def validate_cohort(cohort: Cohort) -> list[FieldError]:
    path = ROOT.child("spec")
    errors = validate_resource_groups(
        cohort.spec.resource_groups,
        path.child("resourceGroups"),
        parent_field="parentName",
        has_parent=bool(cohort.spec.parent_name),
        lending_within_nominal=False,
    )
    errors += validate_fair_sharing(cohort.spec.fair_sharing, path.child("fairSharing"))
    return errors


def validate_local_queue(lq: LocalQueue) -> list[FieldError]:
    return validate_fair_sharing(lq.spec.fair_sharing, ROOT.child("spec", "fairSharing"))


def validate_local_queue_update(old: LocalQueue, new: LocalQueue) -> list[FieldError]:
    errors = validate_local_queue(new)
    old_cq, new_cq = old.spec.cluster_queue, new.spec.cluster_queue
    if old_cq and new_cq and new_cq != old_cq:
        errors.append(
            invalid(
                ROOT.child("spec", "clusterQueue"),
                f"cannot be changed once set (was {old.spec.cluster_queue!r})",
            )
        )
    return errors


MAX_CONCURRENT_ADMISSION_FLAVORS = 16


def validate_concurrent_admission_policy(cq: ClusterQueue) -> list[FieldError]:
    """Upstream's rules for a concurrentAdmissionPolicy, checked only with its
    ConcurrentAdmission gate on (the caller's choice, as upstream's webhook)."""
    spec = cq.spec
    policy = spec.concurrent_admission_policy
    if policy is None:
        return []
    path = ROOT.child("spec")
    errors: list[FieldError] = []
    groups = spec.resource_groups
    if len(groups) != 1:
        errors.append(
            invalid(
                path.child("resourceGroups"),
                f"must have exactly one ResourceGroup when ConcurrentAdmissionPolicy is "
                f"defined (found {len(groups)})",
            )
        )
    elif len(groups[0].flavors) > MAX_CONCURRENT_ADMISSION_FLAVORS:
        errors.append(
            too_many(
                path.child("resourceGroups").index(0).child("flavors"),
                f"cannot have more than {MAX_CONCURRENT_ADMISSION_FLAVORS} resource flavors "
                "in the ResourceGroup when ConcurrentAdmissionPolicy is defined",
            )
        )
    constraints = policy.migration.constraints
    constraints_path = path.child("concurrentAdmissionPolicy", "migration", "constraints")
    if constraints is not None:
        if policy.migration.mode is not MigrationMode.TRY_PREFERRED_FLAVORS:
            errors.append(
                forbidden(
                    constraints_path,
                    f"may only be set when migration.mode is "
                    f'"{MigrationMode.TRY_PREFERRED_FLAVORS}" (got "{policy.migration.mode}")',
                )
            )
        elif constraints.last_acceptable_flavor_name is not None:
            flavors = sorted({f.name for group in groups for f in group.flavors})
            if constraints.last_acceptable_flavor_name not in flavors:
                errors.append(
                    invalid(
                        constraints_path.child("lastAcceptableFlavorName"),
                        f"must be one of the flavors defined in the ClusterQueue: {flavors}",
                    )
                )
    if spec.queueing_strategy is QueueingStrategy.STRICT_FIFO:
        errors.append(
            invalid(
                path.child("queueingStrategy"),
                "StrictFIFO queueing strategy cannot be used when ConcurrentAdmissionPolicy "
                "is defined",
            )
        )
    return errors


def validate_concurrent_admission_policy_update(
    old: ClusterQueue, new: ClusterQueue
) -> list[FieldError]:
    """The policy's rules on the new object; the policy itself is immutable, as upstream."""
    errors = validate_concurrent_admission_policy(new)
    if old.spec.concurrent_admission_policy != new.spec.concurrent_admission_policy:
        errors.append(
            invalid(ROOT.child("spec", "concurrentAdmissionPolicy"), "field is immutable")
        )
    return errors

"""ClusterQueue: a pool of quota, its queueing and preemption policies, and its usage."""

from __future__ import annotations

import enum
from typing import Annotated, ClassVar

import msgspec

from core.api.api_struct import ApiStruct
from core.api.fair_sharing import AdmissionScope, FairSharing, FairSharingStatus
from core.api.groups import KUEUE_API_VERSION
from core.api.markers import (
    AdmissionCheckReference,
    CohortReference,
    Int32,
    ResourceFlavorReference,
    ResourceName,
    Rule,
    SchemaMarkers,
    always,
    doc,
)
from core.api.meta import Condition, LabelSelector, ObjectMeta
from core.api.quantity import Quantity
from core.api.quota import MAX_RESOURCE_GROUPS, ResourceGroup, resource_group_rules


class QueueingStrategy(enum.StrEnum):
    """How workloads of equal priority are ordered in a ClusterQueue."""

    STRICT_FIFO = "StrictFIFO"
    """Oldest first; an old workload that does not fit blocks newer ones."""
    BEST_EFFORT_FIFO = "BestEffortFIFO"
    """Oldest first, but newer workloads that fit may go ahead of one that does not."""


class StopPolicy(enum.StrEnum):
    """Whether a queue is stopped, and what happens to its admitted workloads."""

    NONE = "None"
    HOLD = "Hold"
    """No new admissions; admitted workloads run to completion."""
    HOLD_AND_DRAIN = "HoldAndDrain"
    """No new admissions; admitted workloads are evicted."""


class PreemptionPolicy(enum.StrEnum):
    """Which workloads a pending workload may preempt."""

    NEVER = "Never"
    ANY = "Any"
    LOWER_PRIORITY = "LowerPriority"
    LOWER_OR_NEWER_EQUAL_PRIORITY = "LowerOrNewerEqualPriority"


class BorrowWithinCohortPolicy(enum.StrEnum):
    """Whether a workload that needs to borrow may preempt in other queues of the cohort."""

    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"


class FlavorFungibilityPolicy(enum.StrEnum):
    """Whether flavor search stops at a flavor that needs borrowing or preemption."""

    MAY_STOP_SEARCH = "MayStopSearch"
    TRY_NEXT_FLAVOR = "TryNextFlavor"


class FlavorFungibilityPreference(enum.StrEnum):
    """Tie-break between borrowing and preempting when every flavor needs one of them."""

    BORROWING_OVER_PREEMPTION = "BorrowingOverPreemption"
    PREEMPTION_OVER_BORROWING = "PreemptionOverBorrowing"


class MigrationMode(enum.StrEnum):
    """Upstream's ConcurrentAdmission (an alpha feature gate, off by default): whether an
    admitted workload keeps trying the flavors it prefers."""

    TRY_PREFERRED_FLAVORS = "TryPreferredFlavors"
    RETAIN_FIRST_ADMISSION = "RetainFirstAdmission"


class MigrationConstraints(ApiStruct):
    """How far a migrating workload may go down the ClusterQueue's flavor order."""

    last_acceptable_flavor_name: Annotated[
        ResourceFlavorReference | None,
        doc("The last flavor, in the ClusterQueue's order, a workload may migrate to."),
    ] = None


class Migration(ApiStruct):
    """Migration of admitted workloads between flavors (ConcurrentAdmission)."""

    mode: Annotated[
        MigrationMode, doc("TryPreferredFlavors or RetainFirstAdmission.", required=True)
    ]
    constraints: Annotated[
        MigrationConstraints | None, doc("Limits on where a workload may migrate.")
    ] = None


class ConcurrentAdmissionPolicy(ApiStruct):
    """Upstream v0.19's ConcurrentAdmission settings. Acted on only with the
    ConcurrentAdmission feature gate (off by default, as upstream): a job's Workload then
    gets one variant per flavor (`core.engine.concurrent_admission`); with the gate off it
    is stored, one Workload and one flavor assignment, as upstream."""

    migration: Annotated[Migration, doc("Migration between flavors.", required=True)]


class ClusterQueueConditionType(enum.StrEnum):
    """Condition types set on a ClusterQueue."""

    ACTIVE = "Active"
    MULTIKUEUE_MANAGER_QUOTA_AUTOMATION = "MultiKueueManagerQuotaAutomation"
    """Set by the hub's quota automation (`hub.multikueue.quota_automation`), not the engine."""


class QueueActiveReason(enum.StrEnum):
    """Reasons of the Active condition of a ClusterQueue, and of LocalQueues and Cohorts."""

    TERMINATING = "Terminating"
    STOPPED = "Stopped"
    FLAVOR_NOT_FOUND = "FlavorNotFound"
    ADMISSION_CHECK_NOT_FOUND = "AdmissionCheckNotFound"
    ADMISSION_CHECK_INACTIVE = "AdmissionCheckInactive"
    COHORT_HAS_CYCLE = "CohortHasCycle"
    """The ClusterQueue's cohort tree has a cycle (also the Cohort's own reason)."""
    CLUSTER_QUEUE_IS_INACTIVE = "ClusterQueueIsInactive"
    """LocalQueue: its ClusterQueue is not active."""
    CLUSTER_QUEUE_DOES_NOT_EXIST = "ClusterQueueDoesNotExist"
    """LocalQueue: its ClusterQueue does not exist."""
    MULTIPLE_MULTIKUEUE_ADMISSION_CHECKS = "MultipleMultiKueueAdmissionChecks"
    MULTIKUEUE_ADMISSION_CHECK_APPLIED_PER_FLAVOR = "MultiKueueAdmissionCheckAppliedPerFlavor"
    MULTIKUEUE_WITH_PROVISIONING_REQUEST = "MultiKueueWithProvisioningRequest"
    TOPOLOGY_NOT_FOUND = "TopologyNotFound"
    UNKNOWN = "Unknown"
    READY = "Ready"


class FlavorFungibility(ApiStruct):
    """Whether to try the next flavor before borrowing or preempting in the current one."""

    schema_markers: ClassVar[SchemaMarkers] = {
        "rules": (
            Rule(
                "!has(self.preference) || (self.whenCanBorrow == 'TryNextFlavor'"
                " && self.whenCanPreempt == 'TryNextFlavor')",
                "preference may only be set when whenCanBorrow and whenCanPreempt are both"
                " TryNextFlavor",
                field_path=".preference",
            ),
        )
    }

    when_can_borrow: Annotated[
        FlavorFungibilityPolicy,
        doc(
            "MayStopSearch: take the first flavor that fits, even by borrowing;"
            " TryNextFlavor: look for a flavor that fits without borrowing first.",
            defaulted=True,
        ),
    ] = FlavorFungibilityPolicy.MAY_STOP_SEARCH
    when_can_preempt: Annotated[
        FlavorFungibilityPolicy,
        doc(
            "MayStopSearch: take the first flavor that fits by preempting;"
            " TryNextFlavor: look for a flavor that fits without preemption first.",
            defaulted=True,
        ),
    ] = FlavorFungibilityPolicy.TRY_NEXT_FLAVOR
    preference: Annotated[
        FlavorFungibilityPreference | None,
        doc("Whether to prefer borrowing or preemption when every flavor needs one."),
    ] = None


class BorrowWithinCohort(ApiStruct):
    """Preemption in other queues of the cohort on behalf of a workload that borrows."""

    policy: Annotated[
        BorrowWithinCohortPolicy,
        doc(
            "Never, or LowerPriority to preempt lower-priority workloads in the cohort.",
            defaulted=True,
        ),
    ] = BorrowWithinCohortPolicy.NEVER
    max_priority_threshold: Annotated[
        Int32 | None,
        doc("Only workloads with priority at most this value may be preempted."),
    ] = None


class ClusterQueuePreemption(ApiStruct):
    """When a pending workload may preempt admitted ones, in its queue or its cohort."""

    schema_markers: ClassVar[SchemaMarkers] = {
        "rules": (
            Rule(
                "!(self.reclaimWithinCohort == 'Never' && has(self.borrowWithinCohort)"
                " && self.borrowWithinCohort.policy != 'Never')",
                "borrowWithinCohort.policy must be Never when reclaimWithinCohort is Never",
                field_path=".borrowWithinCohort.policy",
            ),
        )
    }

    reclaim_within_cohort: Annotated[
        PreemptionPolicy,
        doc(
            "Whether a workload that fits the nominal quota may preempt workloads that"
            " borrow it in the cohort: Never, LowerPriority or Any.",
            defaulted=True,
            enum=("Never", "LowerPriority", "Any"),
        ),
    ] = PreemptionPolicy.NEVER
    borrow_within_cohort: Annotated[
        BorrowWithinCohort,
        doc("Preemption in the cohort for workloads that need to borrow.", defaulted=True),
    ] = msgspec.field(default_factory=BorrowWithinCohort)
    within_cluster_queue: Annotated[
        PreemptionPolicy,
        doc(
            "Whether a workload over the nominal quota may preempt in its own queue:"
            " Never, LowerPriority or LowerOrNewerEqualPriority.",
            defaulted=True,
            enum=("Never", "LowerPriority", "LowerOrNewerEqualPriority"),
        ),
    ] = PreemptionPolicy.NEVER


class AdmissionCheckStrategyRule(ApiStruct):
    """An admission check and the flavors it applies to."""

    name: Annotated[AdmissionCheckReference, doc("Name of the AdmissionCheck.", required=True)]
    on_flavors: Annotated[
        list[ResourceFlavorReference],
        doc(
            "Flavors the check runs for; empty means every flavor.",
            max_items=64,
            list_type="set",
        ),
    ] = []


class AdmissionChecksStrategy(ApiStruct):
    """Admission checks a ClusterQueue requires, possibly only for some flavors."""

    admission_checks: Annotated[
        list[AdmissionCheckStrategyRule],
        doc(
            "The checks, each with the flavors it applies to.",
            required=True,
            min_items=1,
            max_items=64,
            list_type="map",
            list_map_keys=("name",),
        ),
    ] = []


LENDING_WITHIN_NOMINAL = Rule(
    "!has(self.lendingLimit) || !isQuantity(string(self.lendingLimit))"
    " || !isQuantity(string(self.nominalQuota))"
    " || quantity(string(self.lendingLimit)).compareTo(quantity(string(self.nominalQuota))) <= 0",
    "lendingLimit must be less than or equal to nominalQuota",
    field_path=".lendingLimit",
)


class ClusterQueueSpec(ApiStruct):
    """Quota, cohort membership and policies of a ClusterQueue."""

    schema_markers: ClassVar[SchemaMarkers] = {
        "rules": resource_group_rules("cohortName", "the ClusterQueue has no cohort"),
        "path_rules": {"resourceGroups.flavors.resources": (LENDING_WITHIN_NOMINAL,)},
    }

    resource_groups: Annotated[
        list[ResourceGroup],
        doc(
            "Groups of resources with the flavors that provide them and their quotas.",
            max_items=MAX_RESOURCE_GROUPS,
            list_type="atomic",
        ),
    ] = []
    cohort_name: Annotated[
        CohortReference,
        doc("Cohort whose members lend unused quota to each other; empty means none."),
    ] = ""
    queueing_strategy: Annotated[
        QueueingStrategy,
        doc("StrictFIFO or BestEffortFIFO ordering of pending workloads.", defaulted=True),
    ] = QueueingStrategy.BEST_EFFORT_FIFO
    namespace_selector: Annotated[
        LabelSelector | None,
        doc("Namespaces allowed to submit here; unset admits none, {} admits all."),
    ] = None
    flavor_fungibility: Annotated[
        FlavorFungibility,
        doc("How the search for a flavor trades borrowing and preemption.", defaulted=True),
    ] = msgspec.field(default_factory=FlavorFungibility)
    preemption: Annotated[ClusterQueuePreemption, doc("Preemption policies.", defaulted=True)] = (
        msgspec.field(default_factory=ClusterQueuePreemption)
    )
    admission_checks_strategy: Annotated[
        AdmissionChecksStrategy | None,
        doc("Admission checks required before workloads are admitted."),
    ] = None
    stop_policy: Annotated[
        StopPolicy,
        doc(
            "None admits; Hold stops admitting; HoldAndDrain also evicts admitted workloads.",
            defaulted=True,
        ),
    ] = StopPolicy.NONE
    fair_sharing: Annotated[
        FairSharing | None, doc("Weight of this queue when fair sharing is enabled.")
    ] = None
    admission_scope: Annotated[
        AdmissionScope | None, doc("Whether admission fair sharing orders this queue.")
    ] = None
    concurrent_admission_policy: Annotated[
        ConcurrentAdmissionPolicy | None,
        doc("Upstream's ConcurrentAdmission settings (acted on with its alpha gate on)."),
    ] = None


class ResourceUsage(ApiStruct):
    """Usage of one resource within one flavor."""

    name: Annotated[ResourceName, doc("Resource name.", required=True)]
    total: Annotated[Quantity, doc("Quota in use, including what is borrowed.")] = always(
        Quantity("0")
    )
    borrowed: Annotated[Quantity, doc("Part of the total above the nominal quota.")] = always(
        Quantity("0")
    )


class FlavorUsage(ApiStruct):
    """Usage of a flavor's resources."""

    name: Annotated[ResourceFlavorReference, doc("Name of the flavor.", required=True)]
    resources: Annotated[
        list[ResourceUsage],
        doc(
            "Usage per resource.",
            required=True,
            max_items=64,
            list_type="map",
            list_map_keys=("name",),
        ),
    ] = []


class ClusterQueueStatus(ApiStruct):
    """Observed state of a ClusterQueue: conditions, usage and workload counts."""

    conditions: Annotated[
        list[Condition],
        doc(
            "Latest observations, such as Active.",
            max_items=16,
            list_type="map",
            list_map_keys=("type",),
        ),
    ] = []
    flavors_reservation: Annotated[
        list[FlavorUsage],
        doc(
            "Quota reserved by workloads, per flavor.",
            max_items=64,
            list_type="map",
            list_map_keys=("name",),
        ),
    ] = []
    flavors_usage: Annotated[
        list[FlavorUsage],
        doc(
            "Quota used by admitted workloads, per flavor.",
            max_items=64,
            list_type="map",
            list_map_keys=("name",),
        ),
    ] = []
    pending_workloads: Annotated[Int32, doc("Workloads waiting for admission.")] = always(0)
    reserving_workloads: Annotated[Int32, doc("Workloads holding a quota reservation.")] = always(0)
    admitted_workloads: Annotated[Int32, doc("Admitted workloads not finished yet.")] = always(0)
    fair_sharing: Annotated[
        FairSharingStatus | None, doc("Fair-sharing standing, when fair sharing is enabled.")
    ] = None


class ClusterQueue(ApiStruct):
    """A cluster-wide pool of quota that admits workloads from its LocalQueues."""

    api_version: str = always(KUEUE_API_VERSION)
    kind: str = always("ClusterQueue")
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: Annotated[ClusterQueueSpec, doc("Desired quota and policies.")] = msgspec.field(
        default_factory=ClusterQueueSpec
    )
    status: Annotated[ClusterQueueStatus, doc("Observed state.")] = msgspec.field(
        default_factory=ClusterQueueStatus
    )

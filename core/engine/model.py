"""The engine's vocabulary: what a driver feeds in and what the engine hands back.

These are plain, typed values with no behaviour. The engine never sees JSON or Kubernetes
objects: `core.adapters.kueue_manifests` translates kueue.x-k8s.io/v1beta2 manifests into
these types, and the engine's status types back into status dicts.

Units: every quantity is an `int` in the resource's base unit: milli-units for `cpu`,
bytes for memory and storage, plain counts for everything else (`pods`, GPUs, ...).
Times are `float` seconds on the engine's clock (see `core.engine.clock`).
Workloads are addressed by their key, `"<namespace>/<name>"` (see `workload_key`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from core.api.admission_check import CheckState
from core.api.cluster_queue import MigrationMode
from core.api.topology_assignment import DelayedTopologyRequestState
from core.api.workload_conditions import WorkloadReason

# --------------------------------------------------------------------------- enums


class QueueingStrategy(StrEnum):
    BEST_EFFORT_FIFO = "BestEffortFIFO"
    STRICT_FIFO = "StrictFIFO"


class StopPolicy(StrEnum):
    NONE = "None"
    HOLD = "Hold"
    HOLD_AND_DRAIN = "HoldAndDrain"


class PreemptionPolicy(StrEnum):
    """Policy values of `withinClusterQueue`, `reclaimWithinCohort` and borrowWithinCohort."""

    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"
    LOWER_OR_NEWER_EQUAL_PRIORITY = "LowerOrNewerEqualPriority"
    ANY = "Any"


class FungibilityPolicy(StrEnum):
    MAY_STOP_SEARCH = "MayStopSearch"
    TRY_NEXT_FLAVOR = "TryNextFlavor"


class FungibilityPreference(StrEnum):
    BORROWING_OVER_PREEMPTION = "BorrowingOverPreemption"
    PREEMPTION_OVER_BORROWING = "PreemptionOverBorrowing"


class TaintEffect(StrEnum):
    NO_SCHEDULE = "NoSchedule"
    PREFER_NO_SCHEDULE = "PreferNoSchedule"
    NO_EXECUTE = "NoExecute"


# --------------------------------------------------------------------------- keys


def workload_key(namespace: str, name: str) -> str:
    """The engine's identity of a workload (and of a LocalQueue): `namespace/name`."""
    return f"{namespace}/{name}"


# --------------------------------------------------------------------------- scheduling hints


@dataclass(frozen=True, slots=True, kw_only=True)
class Taint:
    key: str
    value: str = ""
    effect: TaintEffect = TaintEffect.NO_SCHEDULE


@dataclass(frozen=True, slots=True, kw_only=True)
class Toleration:
    """A pod toleration; `operator` is `Equal` (default) or `Exists`; empty effect = all."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SelectorRequirement:
    """One `matchExpressions` entry of a label selector or a node selector term.

    `operator`: In, NotIn, Exists, DoesNotExist (and Gt, Lt for node selectors).
    """

    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class LabelSelector:
    """A metav1.LabelSelector; the empty selector matches everything."""

    match_labels: Mapping[str, str] = field(default_factory=dict)
    match_expressions: tuple[SelectorRequirement, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeSelectorTerm:
    """One term of `requiredDuringSchedulingIgnoredDuringExecution` (terms are ORed)."""

    match_expressions: tuple[SelectorRequirement, ...] = ()


# --------------------------------------------------------------------------- cluster objects


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceFlavor:
    name: str
    node_labels: Mapping[str, str] = field(default_factory=dict)
    node_taints: tuple[Taint, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    topology_name: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceQuota:
    """Quota of one resource in one flavor; limits are only meaningful inside a cohort."""

    name: str
    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class FlavorQuotas:
    name: str
    resources: tuple[ResourceQuota, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceGroup:
    """Resources that are assigned one flavor together; `flavors` are in preference order."""

    covered_resources: tuple[str, ...]
    flavors: tuple[FlavorQuotas, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class BorrowWithinCohort:
    policy: PreemptionPolicy = PreemptionPolicy.NEVER
    max_priority_threshold: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterQueuePreemption:
    within_cluster_queue: PreemptionPolicy = PreemptionPolicy.NEVER
    reclaim_within_cohort: PreemptionPolicy = PreemptionPolicy.NEVER
    borrow_within_cohort: BorrowWithinCohort = field(default_factory=BorrowWithinCohort)


@dataclass(frozen=True, slots=True, kw_only=True)
class FlavorFungibility:
    when_can_borrow: FungibilityPolicy = FungibilityPolicy.MAY_STOP_SEARCH
    when_can_preempt: FungibilityPolicy = FungibilityPolicy.TRY_NEXT_FLAVOR
    preference: FungibilityPreference | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AdmissionCheckRule:
    """An entry of `admissionChecksStrategy.admissionChecks`; empty `on_flavors` = all."""

    name: str
    on_flavors: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Topology:
    """A Topology: node label keys of its levels, widest first."""

    name: str
    levels: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Node:
    """What TAS needs of a Node: labels, taints, allocatable and whether pods may land."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    allocatable: Mapping[str, int] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    ready: bool = True
    unschedulable: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterQueue:
    name: str
    resource_groups: tuple[ResourceGroup, ...] = ()
    cohort: str | None = None
    queueing_strategy: QueueingStrategy = QueueingStrategy.BEST_EFFORT_FIFO
    # None selects no namespace; LabelSelector() selects every namespace.
    namespace_selector: LabelSelector | None = field(default_factory=LabelSelector)
    preemption: ClusterQueuePreemption = field(default_factory=ClusterQueuePreemption)
    flavor_fungibility: FlavorFungibility = field(default_factory=FlavorFungibility)
    stop_policy: StopPolicy = StopPolicy.NONE
    fair_sharing_weight: float = 1.0
    admission_checks: tuple[AdmissionCheckRule, ...] = ()
    # Set when the object carries a deletionTimestamp: no new admissions.
    terminating: bool = False
    # spec.concurrentAdmissionPolicy (acted on only with EngineConfig.concurrent_admission).
    concurrent_admission: ConcurrentAdmission | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ConcurrentAdmission:
    """A ClusterQueue's concurrentAdmissionPolicy: its jobs queue as one variant Workload
    per flavor of its first resource group (see `concurrent_admission`)."""

    mode: MigrationMode = MigrationMode.TRY_PREFERRED_FLAVORS
    # Migration never goes to a flavor after this one in the queue's order; None: any.
    last_acceptable_flavor: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Cohort:
    """An explicit Cohort; CQs and child cohorts may also name cohorts that do not exist."""

    name: str
    parent: str | None = None
    resource_groups: tuple[ResourceGroup, ...] = ()
    fair_sharing_weight: float = 1.0


@dataclass(frozen=True, slots=True, kw_only=True)
class LocalQueue:
    namespace: str
    name: str
    cluster_queue: str
    stop_policy: StopPolicy = StopPolicy.NONE

    @property
    def key(self) -> str:
        return workload_key(self.namespace, self.name)


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkloadPriorityClass:
    name: str
    value: int


@dataclass(frozen=True, slots=True, kw_only=True)
class AdmissionCheck:
    name: str
    controller_name: str = ""
    active: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class Namespace:
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)


# --------------------------------------------------------------------------- workloads


@dataclass(frozen=True, slots=True, kw_only=True)
class SliceLayer:
    """One podset slice constraint: every `size` pods share a domain of level `level`."""

    level: str
    size: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TopologyRequest:
    """A pod set's topology-aware scheduling request (`podSets[].topologyRequest`).

    At most one of `required`, `preferred`, `unconstrained` is set; `slices` lists the
    slice constraints coarsest first (the legacy single slice annotation is one layer).
    """

    required: str | None = None
    preferred: str | None = None
    unconstrained: bool | None = None
    slices: tuple[SliceLayer, ...] = ()
    group_name: str | None = None

    @property
    def explicit(self) -> bool:
        """Whether this asks for TAS at all (an index label alone does not)."""
        return (
            self.required is not None
            or self.preferred is not None
            or self.unconstrained is not None
            or bool(self.slices)
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class PodSet:
    """A group of identical pods. `requests` are per pod, already effective (see pod_requests)."""

    name: str = "main"
    count: int = 1
    min_count: int | None = None
    requests: Mapping[str, int] = field(default_factory=dict)
    # The template's resource parts as written (`resource_defaults.resource_view`), kept so
    # the namespace's LimitRange defaults and RuntimeClass overhead can be counted; None:
    # `requests` is all there is.
    resources: Mapping[str, Any] | None = None
    node_selector: Mapping[str, str] = field(default_factory=dict)
    required_node_affinity: tuple[NodeSelectorTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    # What is wrong with the template's resource lists (requests above limits, negative
    # quantities), as field errors relative to `template.spec`; any makes it inadmissible.
    resource_problems: tuple[str, ...] = ()
    topology_request: TopologyRequest | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TopologyDomainAssignment:
    """Pods placed in one domain; `values` are its label values for the assignment's levels."""

    values: tuple[str, ...]
    count: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TopologyAssignment:
    """Where TAS placed a pod set, domain by domain (the API's compact form is encoded later)."""

    levels: tuple[str, ...]
    domains: tuple[TopologyDomainAssignment, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class PodSetAssignment:
    """Per pod set: flavor chosen per resource, total usage of the pod set, admitted count."""

    name: str
    flavors: Mapping[str, str]
    resource_usage: Mapping[str, int]
    count: int
    topology_assignment: TopologyAssignment | None = None
    # Set when the placement is deferred to another stage (the worker, under MultiKueue).
    delayed_topology_request: DelayedTopologyRequestState | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Admission:
    cluster_queue: str
    pod_set_assignments: tuple[PodSetAssignment, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Condition:
    type: str
    status: bool
    reason: str
    message: str
    last_transition_time: float


@dataclass(frozen=True, slots=True, kw_only=True)
class RequeueState:
    count: int = 0
    requeue_at: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AdmissionCheckStatus:
    name: str
    state: CheckState
    message: str = ""
    last_transition_time: float = 0.0
    retry_count: int = 0
    requeue_after_seconds: float | None = None
    pod_set_updates: tuple[Mapping[str, object], ...] = ()
    """What the check's controller asks to add to the pod sets (kept as written, passed to
    the job at start; dropped when the check is reset to Pending, as upstream)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkloadStatus:
    """What the engine knows about a workload's status (a `Workload.status` in engine terms)."""

    conditions: tuple[Condition, ...] = ()
    admission: Admission | None = None
    requeue_state: RequeueState | None = None
    admission_checks: tuple[AdmissionCheckStatus, ...] = ()
    reclaimable_pods: Mapping[str, int] = field(default_factory=dict)
    accumulated_past_execution_time_seconds: float = 0.0
    # Eviction counts per "reason" or "reason/underlyingCause", as schedulingStats.evictions.
    evictions: Mapping[str, int] = field(default_factory=dict)
    # The engine's view of spec.active: False once it deactivated the workload (rejected
    # check, requeuing limit, maximum execution time); the driver writes it to the spec.
    active: bool = True

    def condition(self, type_: str) -> Condition | None:
        for cond in self.conditions:
            if cond.type == type_:
                return cond
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Workload:
    """A Workload's spec (plus, when re-adopted after a restart, its last known status)."""

    namespace: str
    name: str
    uid: str
    queue_name: str
    pod_sets: tuple[PodSet, ...]
    priority: int = 0
    priority_class: str | None = None
    creation_time: float = 0.0
    active: bool = True
    maximum_execution_time_seconds: int | None = None
    reclaimable_pods: Mapping[str, int] = field(default_factory=dict)
    # The kueue.x-k8s.io/job-uid label, quoted in preemption messages.
    job_uid: str = ""
    replaces: str | None = None
    """Key of the workload slice this one replaces (an elastic job scaled up): admitted,
    it takes that slice's quota as its own, and the replaced slice is finished."""
    variant_of: str | None = None
    """Key of the parent Workload this one is a concurrent-admission variant of (its
    controller owner reference names a Workload)."""
    allowed_flavors: tuple[str, ...] | None = None
    """The only flavors it may be assigned (the workload-allowed-resource-flavors
    annotation); None: any."""
    status: WorkloadStatus | None = None

    @property
    def key(self) -> str:
        return workload_key(self.namespace, self.name)


# --------------------------------------------------------------------------- outputs


@dataclass(frozen=True, slots=True, kw_only=True)
class AdmittedWorkload:
    key: str
    admission: Admission


@dataclass(frozen=True, slots=True, kw_only=True)
class PreemptionRecord:
    """One victim evicted to make room for a preemptor."""

    victim: str
    victim_uid: str
    victim_cluster_queue: str
    preemptor: str
    preemptor_uid: str
    preemptor_cluster_queue: str
    reason: WorkloadReason
    message: str


@dataclass(slots=True, kw_only=True)
class CycleResult:
    """The outcome of one scheduling cycle.

    `changed` holds the new status of every workload whose status the cycle changed
    (admitted, preempted, or pending with a new reason/message): one patch each.
    `tried` names the heads the cycle took, so a caller can tell whether the next cycle
    would take the same ones (`Engine.next_heads`) and so decide the same way.
    """

    admitted: list[AdmittedWorkload] = field(default_factory=list)
    preempted: list[PreemptionRecord] = field(default_factory=list)
    replaced: dict[str, str] = field(default_factory=dict)
    """Workload slices finished because a slice replacing them was admitted: key -> CQ."""
    changed: dict[str, WorkloadStatus] = field(default_factory=dict)
    heads: int = 0
    tried: frozenset[str] = frozenset()
    evaluated: int = 0
    """Heads nominated afresh; the others' verdicts were kept (`verdict_cache`). A cycle
    with heads but none evaluated decided nothing new: it only requeued them."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FlavorResourceUsage:
    """One `flavorsReservation` / `flavorsUsage` entry: `borrowed = max(0, total - nominal)`."""

    flavor: str
    resource: str
    total: int
    borrowed: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterQueueStatus:
    pending_workloads: int
    reserving_workloads: int
    admitted_workloads: int
    flavors_reservation: tuple[FlavorResourceUsage, ...]
    flavors_usage: tuple[FlavorResourceUsage, ...]
    weighted_share: int
    conditions: tuple[Condition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class CohortStatus:
    weighted_share: int
    conditions: tuple[Condition, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class CohortFigures:
    """A cohort's subtree as metrics report it (per (flavor, resource), base units)."""

    subtree_quota: dict[tuple[str, str], int]
    reservations: dict[tuple[str, str], int]
    admitted_workloads: int


@dataclass(frozen=True, slots=True, kw_only=True)
class LocalQueueStatus:
    pending_workloads: int
    reserving_workloads: int
    admitted_workloads: int
    flavors_reservation: tuple[FlavorResourceUsage, ...]
    flavors_usage: tuple[FlavorResourceUsage, ...]
    conditions: tuple[Condition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingWorkload:
    """One entry of the visibility API's pending workloads list."""

    namespace: str
    name: str
    local_queue: str
    cluster_queue: str
    priority: int
    creation_time: float
    position_in_cluster_queue: int
    position_in_local_queue: int

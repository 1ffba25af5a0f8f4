"""Workload: the unit of admission, one per job, with its pod sets and admission state."""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Annotated, ClassVar, Final

import msgspec

from core.api.admission_check import CheckState
from core.api.api_struct import ApiStruct
from core.api.core_v1 import TOLERATION_RULES, ResourceList, Toleration
from core.api.groups import KUEUE_API_VERSION
from core.api.markers import (
    DNS1123_SUBDOMAIN,
    AdmissionCheckReference,
    ClusterQueueReference,
    Int32,
    LocalQueueName,
    PodSetReference,
    ResourceFlavorReference,
    Rule,
    SchemaMarkers,
    always,
    doc,
)
from core.api.meta import Condition, ObjectMeta
from core.api.pod_template import PodTemplateSpec
from core.api.topology_assignment import DelayedTopologyRequestState, TopologyAssignment

DEFAULT_POD_SET_NAME: Final = "main"
# Upstream v0.17 allows 8 pod sets; later releases raised the limit to 18. fleetq accepts
# 18 so that any Workload either version writes is valid here.
MAX_POD_SETS: Final = 18
MAX_ADMISSION_CHECKS: Final = 8
MAX_PREEMPTION_GATES: Final = 8
RESERVED_POD_RESOURCE: Final = "pods"


class PriorityClassGroup(enum.StrEnum):
    """API group of the class a workload's priority comes from."""

    KUEUE = "kueue.x-k8s.io"
    SCHEDULING = "scheduling.k8s.io"


class PriorityClassKind(enum.StrEnum):
    """Kind of the class a workload's priority comes from."""

    WORKLOAD_PRIORITY_CLASS = "WorkloadPriorityClass"
    PRIORITY_CLASS = "PriorityClass"


class PreemptionGatePosition(enum.StrEnum):
    """Whether a preemption gate lets the workload preempt."""

    CLOSED = "Closed"
    OPEN = "Open"


class PriorityClassRef(ApiStruct):
    """The class (WorkloadPriorityClass or pod PriorityClass) a workload's priority comes from."""

    schema_markers: ClassVar[SchemaMarkers] = {
        "rules": (
            Rule(
                "self.group == 'scheduling.k8s.io' ? self.kind == 'PriorityClass' : true",
                "group scheduling.k8s.io requires kind PriorityClass",
                field_path=".kind",
            ),
            Rule(
                "self.group == 'kueue.x-k8s.io' ? self.kind == 'WorkloadPriorityClass' : true",
                "group kueue.x-k8s.io requires kind WorkloadPriorityClass",
                field_path=".kind",
            ),
        )
    }

    group: Annotated[
        PriorityClassGroup,
        doc("kueue.x-k8s.io or scheduling.k8s.io.", required=True),
    ]
    kind: Annotated[
        PriorityClassKind, doc("WorkloadPriorityClass or PriorityClass.", required=True)
    ]
    name: Annotated[
        str,
        doc(
            "Name of the class.",
            required=True,
            min_length=1,
            max_length=253,
            pattern=DNS1123_SUBDOMAIN,
        ),
    ]


class PodsetSliceRequiredTopologyConstraint(ApiStruct):
    """One layer of slice placement: groups of `size` pods each within one domain."""

    topology: Annotated[
        str, doc("Topology level of this layer.", required=True, min_length=1, max_length=63)
    ]
    size: Annotated[Int32, doc("Pods per group at this layer.", required=True, minimum=1)]


class PodSetTopologyRequest(ApiStruct):
    """Topology-aware scheduling request of a pod set."""

    required: Annotated[
        str | None, doc("Level all pods must share a domain of.", max_length=63)
    ] = None
    preferred: Annotated[
        str | None, doc("Level the pods should share a domain of, if possible.", max_length=63)
    ] = None
    unconstrained: Annotated[
        bool | None, doc("Place pods anywhere with free capacity, tracked by topology.")
    ] = None
    pod_index_label: Annotated[
        str | None, doc("Label holding each pod's index.", max_length=317)
    ] = None
    sub_group_index_label: Annotated[
        str | None, doc("Label holding the index of a pod's replica group.", max_length=317)
    ] = None
    sub_group_count: Annotated[Int32 | None, doc("Number of replica groups.")] = None
    pod_set_group_name: Annotated[
        str | None,
        doc("Pod sets with the same group name get the same flavor.", max_length=256),
    ] = None
    pod_set_slice_required_topology: Annotated[
        str | None, doc("Level each slice of pods must share a domain of.", max_length=63)
    ] = None
    pod_set_slice_size: Annotated[Int32 | None, doc("Pods per slice.")] = None
    podset_slice_required_topology_constraints: Annotated[
        list[PodsetSliceRequiredTopologyConstraint],
        doc(
            "Multi-layer slice constraints, coarsest first (at most 3).",
            max_items=3,
            list_type="atomic",
        ),
    ] = []


class PodSet(ApiStruct):
    """A group of identical pods: a template and how many of it."""

    schema_markers: ClassVar[SchemaMarkers] = {
        "rules": (
            Rule(
                "!has(self.minCount) || self.minCount <= self.count",
                "minCount must not be greater than count",
                field_path=".minCount",
            ),
        )
    }

    name: Annotated[
        PodSetReference, doc("Name of the pod set, unique in the workload.", defaulted=True)
    ] = DEFAULT_POD_SET_NAME
    template: Annotated[
        PodTemplateSpec,
        doc(
            "Pod template; only labels and annotations in its metadata, the pod spec's"
            " other fields kept as given.",
            required=True,
        ),
    ] = {}
    count: Annotated[Int32, doc("Number of pods.", defaulted=True, minimum=0)] = 1
    min_count: Annotated[
        Int32 | None,
        doc("Fewest pods acceptable under partial admission; at most one pod set.", minimum=1),
    ] = None
    topology_request: Annotated[
        PodSetTopologyRequest | None, doc("Topology-aware scheduling request.")
    ] = None


class PreemptionGate(ApiStruct):
    """A named gate that must open before the workload may preempt others."""

    name: Annotated[str, doc("Name of the gate.", required=True, min_length=1, max_length=63)]


class WorkloadSpec(ApiStruct):
    """What a workload needs: pod sets, queue, priority."""

    schema_markers: ClassVar[SchemaMarkers] = {
        "rules": (
            Rule(
                "!has(self.priorityClassRef) || has(self.priority)",
                "priority must be set when priorityClassRef is set",
                field_path=".priority",
            ),
            Rule(
                "self.podSets.filter(p, has(p.minCount)).size() <= 1",
                "at most one pod set may set minCount",
                field_path=".podSets",
            ),
        )
    }

    pod_sets: Annotated[
        list[PodSet],
        doc(
            "Groups of identical pods; cannot be changed while quota is reserved.",
            min_items=1,
            max_items=MAX_POD_SETS,
            list_type="map",
            list_map_keys=("name",),
        ),
    ] = always([])
    queue_name: Annotated[LocalQueueName, doc("LocalQueue the workload is submitted to.")] = ""
    priority_class_ref: Annotated[
        PriorityClassRef | None, doc("Class the priority was taken from.")
    ] = None
    priority: Annotated[Int32 | None, doc("Priority in the ClusterQueue; higher goes first.")] = (
        None
    )
    active: Annotated[
        bool,
        doc("False keeps the workload from being admitted and evicts it.", defaulted=True),
    ] = True
    maximum_execution_time_seconds: Annotated[
        Int32 | None,
        doc("Deactivate the workload after it has been admitted this long.", minimum=1),
    ] = None
    preemption_gates: Annotated[
        list[PreemptionGate],
        doc(
            "Gates, closed by default, that must open before this workload may preempt.",
            max_items=MAX_PREEMPTION_GATES,
            list_type="map",
            list_map_keys=("name",),
        ),
    ] = []


class PodSetAssignment(ApiStruct):
    """Admission result of one pod set: flavors per resource and total usage."""

    name: Annotated[PodSetReference, doc("Name of the pod set.", defaulted=True)] = always(
        DEFAULT_POD_SET_NAME
    )
    flavors: Annotated[
        dict[str, ResourceFlavorReference], doc("Flavor assigned to each resource.")
    ] = {}
    resource_usage: Annotated[
        ResourceList, doc("Total resources of all the pod set's pods at admission.")
    ] = {}
    count: Annotated[Int32 | None, doc("Pods counted at admission.", minimum=0)] = None
    topology_assignment: Annotated[
        TopologyAssignment | None, doc("Placement over topology domains.")
    ] = None
    delayed_topology_request: Annotated[
        DelayedTopologyRequestState | None,
        doc("Whether a deferred topology assignment is still pending.", max_length=7),
    ] = None


class Admission(ApiStruct):
    """Where and how a workload reserved quota."""

    cluster_queue: Annotated[
        ClusterQueueReference, doc("ClusterQueue that reserved the quota.")
    ] = always("")
    pod_set_assignments: Annotated[
        list[PodSetAssignment],
        doc(
            "One assignment per pod set of the spec.",
            max_items=MAX_POD_SETS,
            list_type="map",
            list_map_keys=("name",),
        ),
    ] = always([])


class RequeueState(ApiStruct):
    """Back-off state of a workload evicted for not becoming ready in time."""

    count: Annotated[Int32 | None, doc("Times the workload was requeued.", minimum=0)] = None
    requeue_at: Annotated[datetime | None, doc("When it will be requeued.")] = None


class ReclaimablePod(ApiStruct):
    """Pods of a pod set whose quota is no longer needed (for example, they finished)."""

    name: Annotated[PodSetReference, doc("Name of the pod set.", required=True)]
    count: Annotated[Int32, doc("Number of such pods.", required=True, minimum=0)] = always(0)


class PodSetUpdate(ApiStruct):
    """Additions an admission check asks for on a pod set's pods."""

    name: Annotated[PodSetReference, doc("Name of the pod set.", required=True)]
    labels: Annotated[dict[str, str], doc("Labels to add.")] = {}
    annotations: Annotated[dict[str, str], doc("Annotations to add.")] = {}
    node_selector: Annotated[dict[str, str], doc("Node selector entries to add.")] = {}
    tolerations: Annotated[
        list[Toleration],
        doc(
            "Tolerations to add.",
            max_items=8,
            list_type="atomic",
            rules=TOLERATION_RULES,
        ),
    ] = []


class AdmissionCheckState(ApiStruct):
    """State of one admission check on this workload."""

    name: Annotated[AdmissionCheckReference, doc("Name of the AdmissionCheck.", required=True)]
    state: Annotated[CheckState, doc("Pending, Ready, Retry or Rejected.", required=True)]
    last_transition_time: Annotated[datetime, doc("When the state last changed.", required=True)]
    message: Annotated[
        str, doc("Human-readable detail; may be empty.", required=True, max_length=32768)
    ] = always("")
    requeue_after_seconds: Annotated[
        Int32 | None, doc("Wait at least this long before retrying (with Retry).", minimum=0)
    ] = None
    retry_count: Annotated[Int32 | None, doc("Times the check went to Retry.", minimum=0)] = None
    pod_set_updates: Annotated[
        list[PodSetUpdate],
        doc(
            "Changes the check asks for on the pods.",
            max_items=MAX_POD_SETS,
            list_type="atomic",
        ),
    ] = []


class PodSetRequest(ApiStruct):
    """Resources a pod set asked for when last considered for admission."""

    name: Annotated[PodSetReference, doc("Name of the pod set.", required=True)]
    resources: Annotated[ResourceList, doc("Total resources of all its pods.")] = {}


class WorkloadSchedulingStatsEviction(ApiStruct):
    """How many times the workload was evicted for one reason."""

    reason: Annotated[str, doc("Eviction reason.", required=True, max_length=316)] = always("")
    underlying_cause: Annotated[
        str, doc("Finer cause; may be empty.", required=True, max_length=316)
    ] = always("")
    count: Annotated[Int32, doc("Number of evictions.", required=True, minimum=0)] = always(0)


class SchedulingStats(ApiStruct):
    """Scheduling history of a workload."""

    evictions: Annotated[
        list[WorkloadSchedulingStatsEviction],
        doc(
            "Eviction counts by reason and cause.",
            max_items=256,
            list_type="map",
            list_map_keys=("reason", "underlyingCause"),
        ),
    ] = []


class UnhealthyNode(ApiStruct):
    """A failed node that ran pods of this workload."""

    name: Annotated[str, doc("Node name.", required=True, max_length=63)]


class PreemptionGateState(ApiStruct):
    """Position of one preemption gate."""

    name: Annotated[str, doc("Name of the gate.", required=True, min_length=1, max_length=63)]
    position: Annotated[PreemptionGatePosition, doc("Closed or Open.", required=True)]
    last_transition_time: Annotated[datetime, doc("When the position last changed.", required=True)]


class WorkloadStatus(ApiStruct):
    """Observed state of a workload: conditions, admission, checks, placement."""

    schema_markers: ClassVar[SchemaMarkers] = {
        "rules": (
            Rule(
                "!has(oldSelf.clusterName) || !has(self.clusterName)"
                " || oldSelf.clusterName == self.clusterName",
                "clusterName cannot be changed once set",
                field_path=".clusterName",
            ),
            Rule(
                "!has(self.clusterName) || !has(self.nominatedClusterNames)"
                " || size(self.nominatedClusterNames) == 0",
                "clusterName and nominatedClusterNames cannot both be set",
                field_path=".nominatedClusterNames",
            ),
        )
    }

    conditions: Annotated[
        list[Condition],
        doc(
            "Latest observations: QuotaReserved, Admitted, PodsReady, Finished, Evicted...",
            max_items=16,
            list_type="map",
            list_map_keys=("type",),
        ),
    ] = []
    admission: Annotated[
        Admission | None, doc("Where the workload reserved quota; fixed once set.")
    ] = None
    requeue_state: Annotated[
        RequeueState | None, doc("Back-off state after a PodsReady timeout.")
    ] = None
    reclaimable_pods: Annotated[
        list[ReclaimablePod],
        doc(
            "Pods whose quota can be released, per pod set.",
            max_items=MAX_POD_SETS,
            list_type="map",
            list_map_keys=("name",),
        ),
    ] = []
    admission_checks: Annotated[
        list[AdmissionCheckState],
        doc(
            "State of every admission check the workload needs.",
            max_items=MAX_ADMISSION_CHECKS,
            list_type="map",
            list_map_keys=("name",),
        ),
    ] = []
    resource_requests: Annotated[
        list[PodSetRequest],
        doc(
            "Resources requested when last considered, while not admitted.",
            max_items=MAX_POD_SETS,
            list_type="map",
            list_map_keys=("name",),
        ),
    ] = []
    accumulated_past_execution_time_seconds: Annotated[
        Int32 | None, doc("Time spent admitted in earlier admit/evict cycles.")
    ] = None
    scheduling_stats: Annotated[SchedulingStats | None, doc("Scheduling statistics.")] = None
    nominated_cluster_names: Annotated[
        list[str],
        doc(
            "Worker clusters the workload was offered to; cleared once clusterName is set.",
            max_items=20,
            item_max_length=256,
            list_type="atomic",
        ),
    ] = []
    cluster_name: Annotated[
        str | None, doc("Worker cluster the workload runs on.", max_length=256)
    ] = None
    unhealthy_nodes: Annotated[
        list[UnhealthyNode],
        doc(
            "Failed nodes that ran pods of this workload (topology-aware scheduling).",
            max_items=8,
            list_type="map",
            list_map_keys=("name",),
        ),
    ] = []
    preemption_gates: Annotated[
        list[PreemptionGateState],
        doc(
            "Positions of the preemption gates.",
            max_items=MAX_PREEMPTION_GATES,
            list_type="map",
            list_map_keys=("name",),
        ),
    ] = []


def _reserved(obj: str) -> str:
    return (
        f"has({obj}.status) && has({obj}.status.conditions)"
        f" && {obj}.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True')"
    )


def _admitted(obj: str) -> str:
    return (
        f"has({obj}.status) && has({obj}.status.conditions)"
        f" && {obj}.status.conditions.exists(c, c.type == 'Admitted' && c.status == 'True')"
    )


_BOTH_REFS = "has(oldSelf.spec.priorityClassRef) && has(self.spec.priorityClassRef)"

WORKLOAD_RULES: Final = (
    Rule(
        f"{_reserved('self')} && has(self.status.admission)"
        " ? size(self.spec.podSets) == size(self.status.admission.podSetAssignments) : true",
        "status.admission.podSetAssignments must have one entry per spec.podSets entry",
    ),
    Rule(
        f"({_reserved('oldSelf')}) ? has(oldSelf.spec.priorityClassRef)"
        " == has(self.spec.priorityClassRef) : true",
        "priorityClassRef cannot be added or removed while quota is reserved",
    ),
    Rule(
        f"({_reserved('oldSelf')} && {_BOTH_REFS})"
        " ? oldSelf.spec.priorityClassRef.group == self.spec.priorityClassRef.group : true",
        "priorityClassRef.group cannot change while quota is reserved",
    ),
    Rule(
        f"({_reserved('oldSelf')} && {_BOTH_REFS})"
        " ? oldSelf.spec.priorityClassRef.kind == self.spec.priorityClassRef.kind : true",
        "priorityClassRef.kind cannot change while quota is reserved",
    ),
    Rule(
        f"({_reserved('oldSelf')} && {_BOTH_REFS}"
        " && self.spec.priorityClassRef.group == 'scheduling.k8s.io')"
        " ? oldSelf.spec.priorityClassRef.name == self.spec.priorityClassRef.name : true",
        "priorityClassRef.name of a pod PriorityClass cannot change while quota is reserved",
    ),
    Rule(
        f"({_reserved('oldSelf')}) && ({_reserved('self')})"
        " && has(oldSelf.spec.queueName) && has(self.spec.queueName)"
        " ? oldSelf.spec.queueName == self.spec.queueName : true",
        "queueName cannot change while quota is reserved",
    ),
    Rule(
        f"({_admitted('oldSelf')}) && ({_admitted('self')})"
        " ? (has(oldSelf.spec.maximumExecutionTimeSeconds)"
        " ? oldSelf.spec.maximumExecutionTimeSeconds : 0)"
        " == (has(self.spec.maximumExecutionTimeSeconds)"
        " ? self.spec.maximumExecutionTimeSeconds : 0) : true",
        "maximumExecutionTimeSeconds cannot change while the workload is admitted",
    ),
)


class Workload(ApiStruct):
    """A unit of admission: the pods a job needs, queued and admitted as one."""

    schema_markers: ClassVar[SchemaMarkers] = {"rules": WORKLOAD_RULES}

    api_version: str = always(KUEUE_API_VERSION)
    kind: str = always("Workload")
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: Annotated[WorkloadSpec, doc("Pod sets, queue and priority.")] = msgspec.field(
        default_factory=WorkloadSpec
    )
    status: Annotated[WorkloadStatus, doc("Observed state.")] = msgspec.field(
        default_factory=WorkloadStatus
    )

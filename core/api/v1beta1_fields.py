"""The shapes of fields only kueue.x-k8s.io/v1beta1 has (it is served, never stored).

Everything else in v1beta1 is a v1beta2 field under another name or place
(`core.api.crdgen.v1beta1` derives that schema); these are the fields with no v1beta2
counterpart, typed so their schema is generated like every other.
"""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Annotated

from core.api.api_struct import ApiStruct
from core.api.core_v1 import Taint
from core.api.markers import DNS1123_SUBDOMAIN, Int32, Int64, Rule, doc
from core.api.workload import quota_reserved_cel


class PriorityClassSource(enum.StrEnum):
    """Which kind `priorityClassName` names (v1beta2 says it in `priorityClassRef`)."""

    WORKLOAD_PRIORITY_CLASS = "kueue.x-k8s.io/workloadpriorityclass"
    POD_PRIORITY_CLASS = "scheduling.k8s.io/priorityclass"
    NONE = ""


class ClusterQueuePendingWorkload(ApiStruct):
    """A pending workload, by name (v1beta1's retired pending-workloads list)."""

    name: Annotated[str, doc("Name of the workload.", required=True)] = ""
    namespace: Annotated[str, doc("Namespace of the workload.", required=True)] = ""


class ClusterQueuePendingWorkloadsStatus(ApiStruct):
    """v1beta1's list of a ClusterQueue's head workloads; fleetq reports it nowhere (use the
    visibility API)."""

    cluster_queue_pending_workload: Annotated[
        list[ClusterQueuePendingWorkload],
        doc("The head workloads.", list_type="atomic"),
    ] = []
    last_change_time: Annotated[
        datetime | None, doc("When the list last changed.", required=True)
    ] = None


class TopologyInfo(ApiStruct):
    """The topology a flavor uses."""

    name: Annotated[
        str,
        doc("Name of the Topology.", required=True, max_length=253, pattern=DNS1123_SUBDOMAIN),
    ] = ""
    levels: Annotated[
        list[str],
        doc(
            "Node label keys of the levels, highest first.",
            required=True,
            min_items=1,
            max_items=16,
            list_type="atomic",
        ),
    ] = []


class LocalQueueFlavorStatus(ApiStruct):
    """A flavor a LocalQueue can use, with its node labels, taints and topology."""

    name: Annotated[
        str,
        doc("Name of the flavor.", required=True, max_length=253, pattern=DNS1123_SUBDOMAIN),
    ] = ""
    resources: Annotated[
        list[str], doc("Resources the flavor provides.", max_items=64, list_type="set")
    ] = []
    node_labels: Annotated[
        dict[str, str],
        doc("The flavor's node labels.", max_properties=8, map_type="atomic"),
    ] = {}
    node_taints: Annotated[
        list[Taint], doc("The flavor's node taints.", max_items=8, list_type="atomic")
    ] = []
    topology: Annotated[TopologyInfo | None, doc("The flavor's topology.")] = None


class TopologyDomainAssignment(ApiStruct):
    """Pods placed in one domain, listed one by one (v1beta2 stores slices)."""

    values: Annotated[
        list[str],
        doc(
            "Label values of the domain, one per level.",
            required=True,
            min_items=1,
            max_items=16,
            list_type="atomic",
        ),
    ] = []
    count: Annotated[Int32, doc("Pods placed in the domain.", required=True, minimum=1)] = 1


class RetryDelay(ApiStruct):
    """Holder of AdmissionCheck's `retryDelayMinutes` schema."""

    retry_delay_minutes: Annotated[Int64, doc("Unused; removed in v1beta2.", defaulted=True)] = 15


PRIORITY_NEEDS_VALUE = Rule(
    "!has(self.priorityClassName) || has(self.priority)",
    "priority must be set when priorityClassName is set",
)

_BOTH_SOURCES = "has(oldSelf.spec.priorityClassSource) && has(self.spec.priorityClassSource)"

WORKLOAD_PRIORITY_RULES = (
    Rule(
        f"({quota_reserved_cel('oldSelf')} && {_BOTH_SOURCES})"
        " ? oldSelf.spec.priorityClassSource == self.spec.priorityClassSource : true",
        "priorityClassSource cannot change while quota is reserved",
    ),
    Rule(
        f"({quota_reserved_cel('oldSelf')} && {_BOTH_SOURCES}"
        " && has(oldSelf.spec.priorityClassName) && has(self.spec.priorityClassName)"
        " && self.spec.priorityClassSource != 'kueue.x-k8s.io/workloadpriorityclass')"
        " ? oldSelf.spec.priorityClassName == self.spec.priorityClassName : true",
        "priorityClassName of a pod PriorityClass cannot change while quota is reserved",
    ),
)
"""v1beta1's form of v1beta2's rules on `priorityClassRef.group`, `.kind` and `.name`."""

"""LocalQueue: the namespaced entry point users submit workloads to."""

from __future__ import annotations

import enum
from typing import Annotated

import msgspec

from core.api.api_struct import ApiStruct
from core.api.cluster_queue import StopPolicy
from core.api.fair_sharing import FairSharing, LocalQueueFairSharingStatus
from core.api.groups import KUEUE_API_VERSION
from core.api.markers import (
    ClusterQueueReference,
    Int32,
    ResourceFlavorReference,
    ResourceName,
    always,
    doc,
    immutable_rule,
)
from core.api.meta import Condition, ObjectMeta
from core.api.quantity import Quantity


class LocalQueueConditionType(enum.StrEnum):
    """Condition types set on a LocalQueue."""

    ACTIVE = "Active"


class LocalQueueSpec(ApiStruct):
    """The ClusterQueue behind a LocalQueue, and whether it is stopped."""

    cluster_queue: Annotated[
        ClusterQueueReference,
        doc(
            "ClusterQueue that admits this queue's workloads; cannot be changed.",
            rules=(immutable_rule("clusterQueue cannot be changed once set"),),
        ),
    ] = ""
    stop_policy: Annotated[
        StopPolicy,
        doc(
            "None admits; Hold stops admitting; HoldAndDrain also evicts admitted workloads.",
            defaulted=True,
        ),
    ] = StopPolicy.NONE
    fair_sharing: Annotated[
        FairSharing | None, doc("Weight of this queue under admission fair sharing.")
    ] = None


class LocalQueueResourceUsage(ApiStruct):
    """Usage of one resource within one flavor, by a LocalQueue's workloads."""

    name: Annotated[ResourceName, doc("Resource name.", required=True)]
    total: Annotated[Quantity, doc("Quota in use.")] = always(Quantity("0"))


class LocalQueueFlavorUsage(ApiStruct):
    """Usage of a flavor's resources by a LocalQueue's workloads."""

    name: Annotated[ResourceFlavorReference, doc("Name of the flavor.", required=True)]
    resources: Annotated[
        list[LocalQueueResourceUsage],
        doc(
            "Usage per resource.",
            required=True,
            max_items=16,
            list_type="map",
            list_map_keys=("name",),
        ),
    ] = []


class LocalQueueStatus(ApiStruct):
    """Observed state of a LocalQueue."""

    conditions: Annotated[
        list[Condition],
        doc(
            "Latest observations, such as Active.",
            max_items=16,
            list_type="map",
            list_map_keys=("type",),
        ),
    ] = []
    pending_workloads: Annotated[Int32, doc("Workloads not yet admitted.")] = always(0)
    reserving_workloads: Annotated[Int32, doc("Workloads holding a quota reservation.")] = always(0)
    admitted_workloads: Annotated[Int32, doc("Admitted workloads not finished yet.")] = always(0)
    flavors_reservation: Annotated[
        list[LocalQueueFlavorUsage],
        doc(
            "Quota reserved by this queue's workloads, per flavor.",
            max_items=16,
            list_type="map",
            list_map_keys=("name",),
        ),
    ] = []
    flavors_usage: Annotated[
        list[LocalQueueFlavorUsage],
        doc(
            "Quota used by this queue's admitted workloads, per flavor.",
            max_items=16,
            list_type="map",
            list_map_keys=("name",),
        ),
    ] = []
    fair_sharing: Annotated[
        LocalQueueFairSharingStatus | None, doc("Fair-sharing standing of this queue.")
    ] = None


class LocalQueue(ApiStruct):
    """A namespaced queue that feeds workloads into a ClusterQueue."""

    api_version: str = always(KUEUE_API_VERSION)
    kind: str = always("LocalQueue")
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: Annotated[LocalQueueSpec, doc("Backing ClusterQueue and stop policy.")] = msgspec.field(
        default_factory=LocalQueueSpec
    )
    status: Annotated[LocalQueueStatus, doc("Observed state.")] = msgspec.field(
        default_factory=LocalQueueStatus
    )

"""Fair-sharing settings and status shared by ClusterQueues, Cohorts and LocalQueues."""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Annotated, ClassVar

from core.api.api_struct import ApiStruct
from core.api.core_v1 import ResourceList
from core.api.markers import Int64, Rule, SchemaMarkers, always, doc
from core.api.quantity import Quantity

NON_NEGATIVE_WEIGHT = Rule(
    "!has(self.weight) || !isQuantity(string(self.weight))"
    " || !quantity(string(self.weight)).isLessThan(quantity('0'))",
    "weight must not be negative",
    field_path=".weight",
)


class FairSharing(ApiStruct):
    """How strongly a queue or cohort competes for unused capacity under fair sharing."""

    schema_markers: ClassVar[SchemaMarkers] = {"rules": (NON_NEGATIVE_WEIGHT,)}

    weight: Annotated[
        Quantity,
        doc(
            "Relative share of unused capacity; higher wins more. Zero means always last.",
            defaulted=True,
        ),
    ] = Quantity("1")


class FairSharingStatus(ApiStruct):
    """Current fair-sharing standing of a queue or cohort."""

    weighted_share: Annotated[
        Int64,
        doc(
            "Usage above nominal quota relative to what the cohort can lend, divided by the"
            " weight; 0 when within nominal quota.",
            required=True,
        ),
    ] = always(0)


class AdmissionMode(enum.StrEnum):
    """Whether admission fair sharing orders a ClusterQueue's workloads."""

    USAGE_BASED_ADMISSION_FAIR_SHARING = "UsageBasedAdmissionFairSharing"
    NO_ADMISSION_FAIR_SHARING = "NoAdmissionFairSharing"


class AdmissionScope(ApiStruct):
    """Admission fair-sharing scope of a ClusterQueue."""

    admission_mode: Annotated[
        AdmissionMode, doc("Which admission fair-sharing mode applies.", required=True)
    ]


class LocalQueueAdmissionFairSharingStatus(ApiStruct):
    """Decayed resource consumption of a LocalQueue, used by admission fair sharing."""

    consumed_resources: Annotated[
        ResourceList,
        doc("Resource usage accumulated over time with decay applied.", required=True),
    ] = {}
    last_update: Annotated[
        datetime | None, doc("When the consumption was last updated.", required=True)
    ] = None


class LocalQueueFairSharingStatus(ApiStruct):
    """Fair-sharing standing of a LocalQueue."""

    weighted_share: Annotated[
        Int64, doc("Weighted share of the queue (see ClusterQueue status).", required=True)
    ] = always(0)
    admission_fair_sharing_status: Annotated[
        LocalQueueAdmissionFairSharingStatus | None,
        doc("State used by admission fair sharing."),
    ] = None

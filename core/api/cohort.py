"""Cohort: a node of the quota-sharing tree that groups ClusterQueues and other Cohorts."""

from __future__ import annotations

from typing import Annotated, ClassVar

import msgspec

from core.api.api_struct import ApiStruct
from core.api.fair_sharing import FairSharing, FairSharingStatus
from core.api.groups import KUEUE_API_VERSION
from core.api.markers import CohortReference, SchemaMarkers, always, doc
from core.api.meta import ObjectMeta
from core.api.quota import MAX_RESOURCE_GROUPS, ResourceGroup, resource_group_rules


class CohortSpec(ApiStruct):
    """Parent, extra shared quota and fair-sharing weight of a Cohort."""

    schema_markers: ClassVar[SchemaMarkers] = {
        "rules": resource_group_rules("parentName", "the Cohort has no parent"),
    }

    parent_name: Annotated[
        CohortReference,
        doc("Parent Cohort; unset makes this Cohort the root of its tree."),
    ] = ""
    resource_groups: Annotated[
        list[ResourceGroup],
        doc(
            "Quota shared by all members on top of their own; limits apply towards the parent.",
            max_items=MAX_RESOURCE_GROUPS,
            list_type="atomic",
        ),
    ] = []
    fair_sharing: Annotated[
        FairSharing | None, doc("Weight of this Cohort when fair sharing is enabled.")
    ] = None


class CohortStatus(ApiStruct):
    """Observed state of a Cohort."""

    fair_sharing: Annotated[
        FairSharingStatus | None, doc("Fair-sharing standing, when fair sharing is enabled.")
    ] = None


class Cohort(ApiStruct):
    """Groups ClusterQueues (and child Cohorts) that borrow and lend quota among themselves."""

    api_version: str = always(KUEUE_API_VERSION)
    kind: str = always("Cohort")
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: Annotated[CohortSpec, doc("Desired parent and shared quota.")] = msgspec.field(
        default_factory=CohortSpec
    )
    status: Annotated[CohortStatus, doc("Observed state.")] = msgspec.field(
        default_factory=CohortStatus
    )

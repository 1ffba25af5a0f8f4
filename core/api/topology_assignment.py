"""Where topology-aware scheduling placed a pod set's pods, in a compact encoding.

Pods are assigned to domains of the lowest topology level; each slice lists its domains
by their label values per level (either one shared value or one per domain, with common
prefix and suffix factored out) and the pod count per domain.
"""

from __future__ import annotations

import enum
from typing import Annotated, ClassVar

import msgspec

from core.api.api_struct import ApiStruct
from core.api.markers import Int32, Rule, SchemaMarkers, doc

EXACTLY_ONE_OF_UNIVERSAL_INDIVIDUAL = Rule(
    "has(self.universal) != has(self.individual)",
    "exactly one of universal and individual must be set",
)


class DelayedTopologyRequestState(enum.StrEnum):
    """State of a topology assignment deferred until after a provisioning check."""

    PENDING = "Pending"
    READY = "Ready"


class TopologyAssignmentSliceLevelIndividualValues(ApiStruct):
    """One label value per domain, with a shared prefix and suffix factored out."""

    prefix: Annotated[str | None, doc("Common prefix of the values.", max_length=63)] = None
    suffix: Annotated[str | None, doc("Common suffix of the values.", max_length=63)] = None
    roots: Annotated[
        list[str],
        doc(
            "The values without prefix and suffix, one per domain.",
            required=True,
            min_items=1,
            max_items=100000,
            item_max_length=63,
            list_type="atomic",
        ),
    ] = []


class TopologyAssignmentSliceLevelValues(ApiStruct):
    """Label values of one topology level for the domains of a slice."""

    schema_markers: ClassVar[SchemaMarkers] = {"rules": (EXACTLY_ONE_OF_UNIVERSAL_INDIVIDUAL,)}

    universal: Annotated[
        str | None, doc("One value shared by every domain of the slice.", max_length=63)
    ] = None
    individual: Annotated[
        TopologyAssignmentSliceLevelIndividualValues | None,
        doc("One value per domain of the slice."),
    ] = None


class TopologyAssignmentSlicePodCounts(ApiStruct):
    """Pods per domain of a slice."""

    schema_markers: ClassVar[SchemaMarkers] = {"rules": (EXACTLY_ONE_OF_UNIVERSAL_INDIVIDUAL,)}

    universal: Annotated[Int32 | None, doc("The same pod count in every domain.", minimum=1)] = None
    individual: Annotated[
        list[Int32],
        doc(
            "One pod count per domain.",
            min_items=1,
            max_items=100000,
            item_minimum=1,
            list_type="atomic",
        ),
    ] = []


class TopologyAssignmentSlice(ApiStruct):
    """A group of domains and the pods placed in each."""

    schema_markers: ClassVar[SchemaMarkers] = {
        "rules": (
            Rule(
                "!has(self.podCounts.individual)"
                " || size(self.podCounts.individual) == self.domainCount",
                "podCounts.individual must have domainCount entries",
                field_path=".podCounts.individual",
            ),
            Rule(
                "self.valuesPerLevel.all(x, !has(x.individual)"
                " || size(x.individual.roots) == self.domainCount)",
                "valuesPerLevel[].individual.roots must have domainCount entries",
                field_path=".valuesPerLevel",
            ),
        )
    }

    domain_count: Annotated[
        Int32, doc("Number of domains in this slice.", required=True, minimum=1)
    ]
    values_per_level: Annotated[
        list[TopologyAssignmentSliceLevelValues],
        doc(
            "Label values of the domains, one entry per topology level.",
            required=True,
            min_items=1,
            max_items=16,
            list_type="atomic",
        ),
    ] = []
    pod_counts: Annotated[
        TopologyAssignmentSlicePodCounts, doc("Pods per domain.", required=True)
    ] = msgspec.field(default_factory=TopologyAssignmentSlicePodCounts)


class TopologyAssignment(ApiStruct):
    """Placement of a pod set's pods over topology domains."""

    schema_markers: ClassVar[SchemaMarkers] = {
        "rules": (
            Rule(
                "self.slices.all(x, size(x.valuesPerLevel) == size(self.levels))",
                "every slice must have one valuesPerLevel entry per level",
                field_path=".slices",
            ),
        )
    }

    levels: Annotated[
        list[str],
        doc(
            "Node label keys of the assigned levels, highest first.",
            required=True,
            min_items=1,
            max_items=16,
            item_max_length=317,
            list_type="atomic",
        ),
    ] = []
    slices: Annotated[
        list[TopologyAssignmentSlice],
        doc(
            "Slices whose union is the whole assignment.",
            required=True,
            max_items=1000,
            list_type="atomic",
        ),
    ] = []

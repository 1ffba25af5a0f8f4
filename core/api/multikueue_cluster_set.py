"""MultiKueueClusterSet (fleetq.dev/v1alpha1): worker clusters for one MultiKueue check, past 20.

Upstream caps a MultiKueueConfig at 20 clusters (`spec.clusters` maxItems 20) and fleetq's
copy of that kind stays upstream's. A fleet of hundreds of workers names this kind in its
MultiKueue AdmissionCheck's parameters instead (`apiGroup: fleetq.dev`,
`kind: MultiKueueClusterSet`), and the hub uses it exactly as it would a MultiKueueConfig.
A set lists clusters by name, selects them by label (so `fleetq join` output only needs a
label), or both; its members are the listed names in their order, then the selected
clusters not listed, by name.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Final

import msgspec

from core.api.api_struct import ApiStruct
from core.api.groups import FLEETQ_API_VERSION
from core.api.markers import Rule, SchemaMarkers, always, doc
from core.api.meta import LabelSelector, ObjectMeta

MULTIKUEUE_CLUSTER_SET_KIND: Final = "MultiKueueClusterSet"
MAX_CLUSTERS_PER_SET: Final = 1000


class MultiKueueClusterSetSpec(ApiStruct):
    """Which MultiKueueClusters belong to the set: listed, selected, or both."""

    schema_markers: ClassVar[SchemaMarkers] = {
        "rules": (
            Rule(
                "has(self.clusters) || has(self.clusterSelector)",
                "at least one of clusters and clusterSelector must be set",
            ),
        )
    }

    clusters: Annotated[
        list[str],
        doc(
            "Names of MultiKueueClusters, in order of preference; each at most once.",
            max_items=MAX_CLUSTERS_PER_SET,
            item_max_length=256,
            list_type="set",
        ),
    ] = []
    cluster_selector: Annotated[
        LabelSelector | None,
        doc(
            "MultiKueueClusters whose labels match, after the listed ones, by name; an empty "
            "selector selects every MultiKueueCluster."
        ),
    ] = None


class MultiKueueClusterSet(ApiStruct):
    """A set of worker clusters of any size, referenced from a MultiKueue AdmissionCheck."""

    api_version: str = always(FLEETQ_API_VERSION)
    kind: str = always(MULTIKUEUE_CLUSTER_SET_KIND)
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: Annotated[MultiKueueClusterSetSpec, doc("Member clusters.", required=True)] = (
        msgspec.field(default_factory=MultiKueueClusterSetSpec)
    )

"""ResourceFlavor: a kind of capacity (node labels, taints) that quotas are expressed in."""

from __future__ import annotations

from typing import Annotated, ClassVar

import msgspec

from core.api.api_struct import ApiStruct
from core.api.core_v1 import TAINT_RULES, TOLERATION_RULES, Taint, Toleration
from core.api.groups import KUEUE_API_VERSION
from core.api.markers import Rule, SchemaMarkers, TopologyReference, always, doc
from core.api.meta import ObjectMeta

MAX_NODE_LABELS = 8
MAX_NODE_TAINTS = 8
MAX_TOLERATIONS = 8


class ResourceFlavorSpec(ApiStruct):
    """The nodes a flavor stands for, and what pods need to run there."""

    schema_markers: ClassVar[SchemaMarkers] = {
        "rules": (
            Rule(
                "!has(self.topologyName) || (has(self.nodeLabels) && size(self.nodeLabels) >= 1)",
                "nodeLabels must have at least one label when topologyName is set",
                field_path=".nodeLabels",
            ),
            Rule(
                "!has(oldSelf.topologyName) || (has(self.nodeLabels) == has(oldSelf.nodeLabels)"
                " && (!has(self.nodeLabels) || self.nodeLabels == oldSelf.nodeLabels))",
                "nodeLabels cannot change while topologyName is set",
                field_path=".nodeLabels",
            ),
            Rule(
                "!has(oldSelf.topologyName) || (has(self.tolerations) == has(oldSelf.tolerations)"
                " && (!has(self.tolerations) || self.tolerations == oldSelf.tolerations))",
                "tolerations cannot change while topologyName is set",
                field_path=".tolerations",
            ),
            Rule(
                "!has(oldSelf.topologyName) || (has(self.topologyName)"
                " && self.topologyName == oldSelf.topologyName)",
                "topologyName cannot change or be removed once set",
                field_path=".topologyName",
            ),
        )
    }

    node_labels: Annotated[
        dict[str, str],
        doc(
            "Labels of the nodes this flavor stands for; injected into admitted pods.",
            max_properties=MAX_NODE_LABELS,
            map_type="atomic",
        ),
    ] = {}
    node_taints: Annotated[
        list[Taint],
        doc(
            "Taints those nodes carry; workloads must tolerate them to get this flavor.",
            max_items=MAX_NODE_TAINTS,
            list_type="atomic",
            rules=TAINT_RULES,
        ),
    ] = []
    tolerations: Annotated[
        list[Toleration],
        doc(
            "Tolerations added to pods admitted with this flavor.",
            max_items=MAX_TOLERATIONS,
            list_type="atomic",
            rules=TOLERATION_RULES,
        ),
    ] = []
    topology_name: Annotated[
        TopologyReference | None,
        doc("Topology used for topology-aware scheduling on these nodes."),
    ] = None


class ResourceFlavor(ApiStruct):
    """A flavor of capacity, such as a GPU model or spot nodes, that quotas refer to."""

    api_version: str = always(KUEUE_API_VERSION)
    kind: str = always("ResourceFlavor")
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: Annotated[ResourceFlavorSpec, doc("Node labels, taints and tolerations.")] = (
        msgspec.field(default_factory=ResourceFlavorSpec)
    )

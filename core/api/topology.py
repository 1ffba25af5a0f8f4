"""Topology: the node-label hierarchy (block, rack, host...) used for topology-aware scheduling."""

from __future__ import annotations

from typing import Annotated

import msgspec

from core.api.api_struct import ApiStruct
from core.api.groups import KUEUE_API_VERSION
from core.api.markers import QUALIFIED_NAME, Rule, always, doc, immutable_rule
from core.api.meta import ObjectMeta

HOSTNAME_LABEL = "kubernetes.io/hostname"


class TopologyLevel(ApiStruct):
    """One level of a topology, named by the node label that identifies its domains."""

    node_label: Annotated[
        str,
        doc(
            "Node label whose values name the domains of this level.",
            required=True,
            min_length=1,
            max_length=316,
            pattern=QUALIFIED_NAME,
        ),
    ] = ""


class TopologySpec(ApiStruct):
    """The levels of a topology, from the widest to the narrowest."""

    levels: Annotated[
        list[TopologyLevel],
        doc(
            "Levels from the highest (e.g. block) to the lowest (e.g. host); immutable.",
            required=True,
            min_items=1,
            max_items=16,
            list_type="atomic",
            rules=(
                immutable_rule("levels cannot be changed"),
                Rule(
                    "size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0",
                    "levels must be unique",
                ),
                Rule(
                    f"size(self.filter(i, i.nodeLabel == '{HOSTNAME_LABEL}')) == 0"
                    f" || self[size(self) - 1].nodeLabel == '{HOSTNAME_LABEL}'",
                    f"{HOSTNAME_LABEL} may only be the lowest level",
                ),
            ),
        ),
    ] = []


class Topology(ApiStruct):
    """A hierarchy of node groups, so tightly coupled pods can be placed close together."""

    api_version: str = always(KUEUE_API_VERSION)
    kind: str = always("Topology")
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: Annotated[TopologySpec, doc("Topology levels.")] = msgspec.field(
        default_factory=TopologySpec
    )

"""Object metadata, conditions and label selectors (the parts of meta/v1 fleetq reads).

Only the fields controllers act on are typed; anything else in `metadata` (for example
`managedFields`) is skipped when decoding, which keeps cached objects small.
"""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Annotated, ClassVar

import msgspec

from core.api.api_struct import ApiStruct
from core.api.markers import (
    CONDITION_REASON,
    QUALIFIED_NAME,
    Int64,
    SchemaMarkers,
    always,
    doc,
)


class OwnerReference(ApiStruct):
    """Points at the object that owns this one, for garbage collection."""

    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(ApiStruct):
    """Identity, labels and bookkeeping of an object."""

    name: str = ""
    generate_name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    creation_timestamp: datetime | None = None
    deletion_timestamp: datetime | None = None
    deletion_grace_period_seconds: int | None = None
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    finalizers: list[str] = []
    owner_references: list[OwnerReference] = []


class ListMeta(ApiStruct):
    """Metadata of a list response: where a following watch should start."""

    resource_version: str = ""
    continue_token: str = msgspec.field(default="", name="continue")
    remaining_item_count: int | None = None


class ConditionStatus(enum.StrEnum):
    """Whether a condition holds."""

    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class Condition(ApiStruct):
    """One observation of an object's state, keyed by type (metav1.Condition)."""

    type: Annotated[
        str,
        doc(
            "Kind of observation, in CamelCase (e.g. Active, Admitted).",
            required=True,
            max_length=316,
            pattern=QUALIFIED_NAME,
        ),
    ]
    status: Annotated[
        ConditionStatus,
        doc("Whether the observation holds: True, False or Unknown.", required=True),
    ]
    reason: Annotated[
        str,
        doc(
            "Machine-readable CamelCase cause of the last transition.",
            required=True,
            min_length=1,
            max_length=1024,
            pattern=CONDITION_REASON,
        ),
    ]
    last_transition_time: Annotated[datetime, doc("When the status last changed.", required=True)]
    message: Annotated[
        str, doc("Human-readable detail; may be empty.", required=True, max_length=32768)
    ] = always("")
    observed_generation: Annotated[
        Int64 | None,
        doc("metadata.generation the observation was based on.", minimum=0),
    ] = None


class LabelSelectorRequirement(ApiStruct):
    """One set-based label match: key, operator (In, NotIn, Exists, DoesNotExist), values."""

    key: Annotated[str, doc("Label key the requirement applies to.", required=True)]
    operator: Annotated[str, doc("In, NotIn, Exists or DoesNotExist.", required=True)]
    values: Annotated[
        list[str], doc("Values for In and NotIn; empty otherwise.", list_type="atomic")
    ] = []


class LabelSelector(ApiStruct):
    """Selects objects by labels; all terms must match. An empty selector matches all."""

    schema_markers: ClassVar[SchemaMarkers] = {"map_type": "atomic"}

    match_labels: Annotated[
        dict[str, str], doc("Labels that must be present with exactly these values.")
    ] = {}
    match_expressions: Annotated[
        list[LabelSelectorRequirement],
        doc("Set-based requirements, all of which must hold.", list_type="atomic"),
    ] = []

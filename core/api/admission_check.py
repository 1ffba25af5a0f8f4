"""AdmissionCheck: an extra gate, run by a named controller, before a workload is admitted."""

from __future__ import annotations

import enum
from typing import Annotated

import msgspec

from core.api.api_struct import ApiStruct
from core.api.groups import KUEUE_API_VERSION
from core.api.markers import (
    DNS1123_LABEL,
    DNS1123_SUBDOMAIN,
    KIND_NAME,
    always,
    doc,
    immutable_rule,
)
from core.api.meta import Condition, ObjectMeta


class CheckState(enum.StrEnum):
    """State of an admission check on one workload."""

    PENDING = "Pending"
    """Not evaluated yet, or waiting for quota to be reserved."""
    READY = "Ready"
    """Passed."""
    RETRY = "Retry"
    """Cannot pass now: release the quota and try again later."""
    REJECTED = "Rejected"
    """Will not pass: the workload is deactivated."""


class AdmissionCheckConditionType(enum.StrEnum):
    """Condition types set on an AdmissionCheck."""

    ACTIVE = "Active"


class AdmissionCheckParametersReference(ApiStruct):
    """Points at an object holding settings for the check's controller."""

    api_group: Annotated[
        str,
        doc(
            "API group of the referenced object.",
            required=True,
            min_length=1,
            max_length=253,
            pattern=DNS1123_SUBDOMAIN,
        ),
    ] = ""
    kind: Annotated[
        str,
        doc(
            "Kind of the referenced object.",
            required=True,
            min_length=1,
            max_length=63,
            pattern=KIND_NAME,
        ),
    ] = ""
    name: Annotated[
        str,
        doc(
            "Name of the referenced object.",
            required=True,
            min_length=1,
            max_length=63,
            pattern=DNS1123_LABEL,
        ),
    ] = ""


class AdmissionCheckSpec(ApiStruct):
    """Which controller runs the check, and with which parameters."""

    controller_name: Annotated[
        str,
        doc(
            "Controller that evaluates this check, e.g. kueue.x-k8s.io/multikueue.",
            required=True,
            min_length=1,
            max_length=253,
            rules=(immutable_rule("controllerName cannot be changed"),),
        ),
    ] = always("")
    parameters: Annotated[
        AdmissionCheckParametersReference | None,
        doc("Object with extra settings for the controller."),
    ] = None


class AdmissionCheckStatus(ApiStruct):
    """Observed state of an AdmissionCheck."""

    conditions: Annotated[
        list[Condition],
        doc(
            "Latest observations, such as Active.",
            max_items=16,
            list_type="map",
            list_map_keys=("type",),
        ),
    ] = []


class AdmissionCheck(ApiStruct):
    """A gate a ClusterQueue can require; its controller marks each workload Ready or not."""

    api_version: str = always(KUEUE_API_VERSION)
    kind: str = always("AdmissionCheck")
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: Annotated[AdmissionCheckSpec, doc("Controller and parameters.")] = msgspec.field(
        default_factory=AdmissionCheckSpec
    )
    status: Annotated[AdmissionCheckStatus, doc("Observed state.")] = msgspec.field(
        default_factory=AdmissionCheckStatus
    )

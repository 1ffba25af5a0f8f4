"""WorkloadPriorityClass: a named priority for workloads, independent of pod priority."""

from __future__ import annotations

from typing import Annotated

import msgspec

from core.api.api_struct import ApiStruct
from core.api.groups import KUEUE_API_VERSION
from core.api.markers import Int32, always, doc
from core.api.meta import ObjectMeta


class WorkloadPriorityClass(ApiStruct):
    """A priority value that workloads refer to by name."""

    api_version: str = always(KUEUE_API_VERSION)
    kind: str = always("WorkloadPriorityClass")
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    value: Annotated[
        Int32,
        doc("The priority; higher runs first. Changing it does not affect existing workloads."),
    ] = always(0)
    description: Annotated[str, doc("When to use this class.", max_length=2048)] = ""

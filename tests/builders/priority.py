"""WorkloadPriorityClass: a named priority value (upstream: `MakeWorkloadPriorityClass`)."""

from __future__ import annotations

from typing import Self

from tests.builders.base import KUEUE_API_VERSION, ObjectBuilder


class WorkloadPriorityClass(ObjectBuilder):
    """`value` and `description` sit at the top level of this kind, not under spec."""

    api_version = KUEUE_API_VERSION
    kind = "WorkloadPriorityClass"

    def __init__(self, name: str, value: int | None = None) -> None:
        super().__init__(name)
        if value is not None:
            self.value(value)

    def value(self, value: int) -> Self:
        self._obj["value"] = value
        return self

    def description(self, text: str) -> Self:
        self._obj["description"] = text
        return self

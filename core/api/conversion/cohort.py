"""Cohort: the same in both versions but for v1beta1's admission fair sharing status."""

from __future__ import annotations

from core.api.conversion.fair_sharing import drop_admission_fair_sharing_status
from core.api.conversion.fields import JsonObject


def to_v1beta1(obj: JsonObject) -> None:
    del obj  # every v1beta2 field has its place in v1beta1


def to_v1beta2(obj: JsonObject) -> None:
    drop_admission_fair_sharing_status(obj)

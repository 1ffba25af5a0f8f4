"""AdmissionCheck: v1beta1's `spec.retryDelayMinutes` was never used and is gone in
v1beta2; reading in v1beta1 shows its default again (15)."""

from __future__ import annotations

from core.api.conversion.fields import JsonObject, child, drop


def to_v1beta1(obj: JsonObject) -> None:
    del obj  # every v1beta2 field has its place in v1beta1


def to_v1beta2(obj: JsonObject) -> None:
    drop(child(obj, "spec"), "retryDelayMinutes")

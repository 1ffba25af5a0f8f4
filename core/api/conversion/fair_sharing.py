"""Fair sharing status: v1beta1 ClusterQueues and Cohorts could carry an admission fair
sharing status, which v1beta2 keeps on LocalQueues only; upstream drops it."""

from __future__ import annotations

from core.api.conversion.fields import JsonObject, child, drop


def drop_admission_fair_sharing_status(obj: JsonObject) -> None:
    drop(child(obj, "status", "fairSharing"), "admissionFairSharingStatus")

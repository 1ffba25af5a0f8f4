"""ClusterQueue: v1beta1's `cohort` and `admissionChecks`, v1beta2's `cohortName` and
`admissionChecksStrategy`.

As upstream: a v1beta1 list of check names becomes strategy rules without flavors (and
wins over a strategy also given); the retired fungibility values `Borrow` and `Preempt`
become `MayStopSearch`; v1beta1's `status.pendingWorkloadsStatus` and the queue's
admission fair sharing status are not carried over (the hub reports neither). v1beta2's
`concurrentAdmissionPolicy` is kept in the preservation annotation.
"""

from __future__ import annotations

from typing import Final

from core.api.conversion.fair_sharing import drop_admission_fair_sharing_status
from core.api.conversion.fields import JsonObject, child, drop, rename
from core.api.conversion.preserved import restore_fields, stash_fields

V1BETA2_ONLY: Final = ("spec.concurrentAdmissionPolicy",)
RETIRED_FUNGIBILITY: Final = {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"}


def to_v1beta1(obj: JsonObject) -> None:
    rename(child(obj, "spec"), "cohortName", "cohort")
    stash_fields(obj, V1BETA2_ONLY)


def to_v1beta2(obj: JsonObject) -> None:
    spec = child(obj, "spec")
    rename(spec, "cohort", "cohortName")
    if spec is not None:
        checks = spec.pop("admissionChecks", None)
        if isinstance(checks, list) and checks:
            spec["admissionChecksStrategy"] = {
                "admissionChecks": [{"name": name} for name in checks]
            }
        fungibility = child(spec, "flavorFungibility")
        for field, retired in RETIRED_FUNGIBILITY.items():
            if fungibility is not None and fungibility.get(field) == retired:
                fungibility[field] = "MayStopSearch"
    drop(child(obj, "status"), "pendingWorkloadsStatus")
    drop_admission_fair_sharing_status(obj)
    restore_fields(obj)

"""LocalQueue: `status.flavorUsage` (v1beta1) is `status.flavorsUsage` (v1beta2).

v1beta1's `status.flavors` (the flavors' node labels, taints and topology) has no v1beta2
counterpart and is dropped, as upstream does; the hub does not report it.
"""

from __future__ import annotations

from core.api.conversion.fields import JsonObject, child, drop, rename


def to_v1beta1(obj: JsonObject) -> None:
    rename(child(obj, "status"), "flavorsUsage", "flavorUsage")


def to_v1beta2(obj: JsonObject) -> None:
    status = child(obj, "status")
    rename(status, "flavorUsage", "flavorsUsage")
    drop(status, "flavors")

"""MultiKueueCluster: v1beta1's `spec.kubeConfig` / `spec.clusterProfileRef` sit under
v1beta2's `spec.clusterSource`. MultiKueueConfig: v1beta2's `spec.quotaManagement` has
no v1beta1 field and is kept in the preservation annotation.
"""

from __future__ import annotations

from typing import Final

from core.api.conversion.fields import JsonObject, child
from core.api.conversion.preserved import restore_fields, stash_fields

CLUSTER_SOURCES: Final = ("kubeConfig", "clusterProfileRef")
CONFIG_V1BETA2_ONLY: Final = ("spec.quotaManagement",)


def cluster_to_v1beta1(obj: JsonObject) -> None:
    spec = child(obj, "spec")
    source = child(spec, "clusterSource")
    if spec is None or source is None:
        return
    del spec["clusterSource"]
    for name in CLUSTER_SOURCES:
        if name in source:
            spec[name] = source[name]


def cluster_to_v1beta2(obj: JsonObject) -> None:
    spec = child(obj, "spec")
    if spec is None:
        return
    source = {name: spec.pop(name) for name in CLUSTER_SOURCES if name in spec}
    if source:
        spec["clusterSource"] = source


def config_to_v1beta1(obj: JsonObject) -> None:
    stash_fields(obj, CONFIG_V1BETA2_ONLY)


def config_to_v1beta2(obj: JsonObject) -> None:
    restore_fields(obj)

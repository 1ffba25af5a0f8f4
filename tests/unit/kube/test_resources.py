"""REST paths for core, grouped, namespaced and cluster-scoped resources."""

from __future__ import annotations

import pytest

from core.api.registry import kind_info
from core.kube.resources import (
    CONFIGMAPS,
    EVENTS,
    NAMESPACES,
    collection_path,
    object_path,
    resource_label,
)


def test_core_resources_live_under_api_v1() -> None:
    assert collection_path(CONFIGMAPS, "ns") == "/api/v1/namespaces/ns/configmaps"
    assert collection_path(CONFIGMAPS) == "/api/v1/configmaps"
    assert object_path(NAMESPACES, "ns") == "/api/v1/namespaces/ns"


def test_grouped_resources_and_subresources() -> None:
    workloads = kind_info("Workload")
    assert object_path(workloads, "w", "ns", "status") == (
        "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/w/status"
    )
    assert object_path(kind_info("ClusterQueue"), "cq", "ignored") == (
        "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/cq"
    )
    assert collection_path(EVENTS, "ns") == "/apis/events.k8s.io/v1/namespaces/ns/events"
    assert resource_label(workloads) == "workloads.kueue.x-k8s.io"
    assert resource_label(CONFIGMAPS) == "configmaps"


def test_a_namespaced_object_without_namespace_is_refused() -> None:
    with pytest.raises(ValueError, match="namespaced"):
        object_path(CONFIGMAPS, "x")
    with pytest.raises(ValueError, match="needs a name"):
        object_path(CONFIGMAPS, "", "ns")

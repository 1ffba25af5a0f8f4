"""The kind registry: unique names and correct REST paths."""

from __future__ import annotations

import pytest

from core.api.cluster_queue import ClusterQueue
from core.api.registry import KINDS, Scope, kind_info


def test_kinds_plurals_and_short_names_are_unique() -> None:
    assert len({info.kind for info in KINDS}) == len(KINDS)
    assert len({info.plural for info in KINDS}) == len(KINDS)
    short = [name for info in KINDS for name in info.short_names]
    assert len(short) == len(set(short))


def test_every_type_declares_its_own_api_version_and_kind() -> None:
    for info in KINDS:
        instance = info.type()
        assert instance.api_version == info.api_version
        assert instance.kind == info.kind


def test_lookup_by_kind_plural_and_type() -> None:
    assert kind_info("ClusterQueue") is kind_info("clusterqueues") is kind_info(ClusterQueue)
    with pytest.raises(KeyError):
        kind_info("Nope")


def test_rest_paths() -> None:
    workload = kind_info("Workload")
    assert workload.scope is Scope.NAMESPACED
    assert workload.path() == "/apis/kueue.x-k8s.io/v1beta2/workloads"
    assert workload.path("ns") == "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads"
    assert workload.path("ns", "w") == "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/w"
    cq = kind_info("ClusterQueue")
    assert cq.path("ignored", "q") == "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/q"
    assert kind_info("WorkerCapacity").path() == "/apis/fleetq.dev/v1alpha1/workercapacities"

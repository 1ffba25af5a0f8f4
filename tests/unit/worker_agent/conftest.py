"""Nodes and pods as the API returns them, for the capacity report tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from core.api.codec import decode
from core.api.json_types import JsonDict
from core.api.resource_flavor import ResourceFlavor


def _node(
    name: str,
    allocatable: dict[str, str],
    *,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    ready: str = "True",
    unschedulable: bool = False,
) -> JsonDict:
    spec: JsonDict = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": {
            "allocatable": allocatable,
            "capacity": allocatable,
            "conditions": [
                {"type": "MemoryPressure", "status": "False"},
                {"type": "Ready", "status": ready},
            ],
        },
    }


def _pod(
    name: str,
    node: str | None,
    requests: dict[str, str],
    *,
    phase: str = "Running",
    init_requests: dict[str, str] | None = None,
    overhead: dict[str, str] | None = None,
) -> JsonDict:
    spec: JsonDict = {"containers": [{"name": "main", "resources": {"requests": requests}}]}
    if node is not None:
        spec["nodeName"] = node
    if init_requests:
        spec["initContainers"] = [{"name": "init", "resources": {"requests": init_requests}}]
    if overhead:
        spec["overhead"] = overhead
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": spec,
        "status": {"phase": phase},
    }


def _flavor(name: str, labels: dict[str, str], **spec: Any) -> ResourceFlavor:
    return decode(
        ResourceFlavor, {"metadata": {"name": name}, "spec": {"nodeLabels": labels, **spec}}
    )


@pytest.fixture
def make_node() -> Callable[..., JsonDict]:
    return _node


@pytest.fixture
def make_pod() -> Callable[..., JsonDict]:
    return _pod


@pytest.fixture
def make_flavor() -> Callable[..., ResourceFlavor]:
    return _flavor

"""Duplicate environment variables, resolved the way the kubelet resolves them.

Kubernetes accepts a container whose `env` names a variable twice; the last value wins
when the pod runs. Upstream stores pod templates in Workloads with the duplicates
folded, keeping the first position and the last value, so a Workload built by fleetq
compares equal to one built by upstream, and a job edited only in a shadowed duplicate
does not count as changed.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

__all__ = ["fold_duplicate_env"]


def _fold(env: list[Any]) -> list[Any]:
    last: dict[Any, Any] = {}
    for variable in env:
        name = variable.get("name") if isinstance(variable, Mapping) else None
        last[name] = variable  # dict keeps the first insertion's position
    return list(last.values())


def fold_duplicate_env(template: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a pod template whose containers name each env variable once."""
    result: dict[str, Any] = copy.deepcopy(dict(template))
    spec = result.get("spec")
    if not isinstance(spec, dict):
        return result
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or ():
            if isinstance(container, dict) and isinstance(container.get("env"), list):
                container["env"] = _fold(container["env"])
    return result

"""One `podSpecOverrides` entry merged into a pod spec, as Trainer v2.0 merges it.

Trainer applies each override to the pod specs of the replicated jobs it targets with a
strategic merge patch on `PodSpec`, in list order. For the fields an override can carry
that means: serviceAccountName replaced; nodeSelector merged key by key; tolerations
replaced as a whole (PodSpec gives them no merge key); volumes and schedulingGates merged
by name; containers and initContainers merged by name, their env by name and their
volumeMounts by mountPath. An override naming a container the pod does not have changes
nothing (Trainer's webhook refuses such a TrainJob). Empty fields are absent, as Go
leaves them out of the patch.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

JsonDict = dict[str, Any]


def merge_by_key(items: list[Any], extra: Iterable[Any], key: str) -> list[Any]:
    """`items` with each of `extra` replacing the one of the same `key`, or appended."""
    out = [copy.deepcopy(item) for item in items]
    for item in extra:
        if not isinstance(item, Mapping):
            continue
        for index, have in enumerate(out):
            if isinstance(have, Mapping) and have.get(key) == item.get(key):
                out[index] = {**have, **copy.deepcopy(dict(item))}
                break
        else:
            out.append(copy.deepcopy(dict(item)))
    return out


def _merge_containers(containers: list[Any], overrides: Iterable[Any]) -> list[Any]:
    out = [copy.deepcopy(c) for c in containers]
    for override in overrides:
        if not isinstance(override, Mapping):
            continue
        for container in out:
            if isinstance(container, dict) and container.get("name") == override.get("name"):
                if override.get("env"):
                    container["env"] = merge_by_key(
                        container.get("env") or [], override["env"], "name"
                    )
                if override.get("volumeMounts"):
                    container["volumeMounts"] = merge_by_key(
                        container.get("volumeMounts") or [], override["volumeMounts"], "mountPath"
                    )
    return out


def apply_override(pod_spec: Mapping[str, Any], override: Mapping[str, Any]) -> JsonDict:
    """A copy of `pod_spec` with `override` merged in (see module docstring)."""
    result: JsonDict = copy.deepcopy(dict(pod_spec))
    if override.get("serviceAccountName"):
        result["serviceAccountName"] = override["serviceAccountName"]
    if override.get("nodeSelector"):
        result["nodeSelector"] = {
            **(result.get("nodeSelector") or {}),
            **dict(override["nodeSelector"]),
        }
    if override.get("tolerations"):
        result["tolerations"] = copy.deepcopy(list(override["tolerations"]))
    for field in ("volumes", "schedulingGates"):
        if override.get(field):
            result[field] = merge_by_key(result.get(field) or [], override[field], "name")
    for field in ("containers", "initContainers"):
        if override.get(field):
            result[field] = _merge_containers(result.get(field) or [], override[field])
    return result


def targets(override: Mapping[str, Any]) -> set[str]:
    """Names of the replicated jobs an override applies to."""
    return {
        str(target.get("name"))
        for target in override.get("targetJobs") or ()
        if isinstance(target, Mapping)
    }

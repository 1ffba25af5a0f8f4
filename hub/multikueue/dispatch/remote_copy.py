"""The Workload a worker gets, and how far a worker's copy has drifted from the manager's.

A remote copy carries the manager Workload's name, namespace, labels, annotations and spec,
plus our origin label (which worker objects are ours to touch), and nothing else: no
ownerReferences (the owner lives on another cluster), no status (the worker admits it),
and no `kueue.x-k8s.io/job-uid` label, as upstream's copies since v0.19: it names the
manager's Job, and a worker running upstream v0.19 finishes a Workload carrying it
without an owner as orphaned (`OwnerNotFound`) before the worker's Job adopts it.

Drift: the manager may change a Workload's priority while it is dispatched (patched on
the copy in place, as upstream); any other difference means the copy no longer describes
the workload and it is replaced. The two apiservers may run different CRDs (a worker
running upstream Kueue defaults fields fleetq's schema leaves alone, such as a container
port's protocol), and a difference only one side's defaulting introduced must never
cause an endless delete-and-recreate loop. So each copy carries, in the annotation
`SPEC_ANNOTATION`, a fingerprint of the manager's spec (priority aside) as it was sent;
drift is the manager's spec moving away from that, never the worker's defaults. A copy
without the annotation is compared field by field, empty values and known defaults
ignored.
"""

from __future__ import annotations

import copy
import enum
import hashlib
from collections.abc import Mapping
from typing import Any

import orjson

from core.api.multikueue import MULTIKUEUE_ORIGIN_LABEL
from hub.multikueue.dispatch.workload_facts import Json, metadata, spec
from integrations.framework.labels import JOB_UID_LABEL

PRIORITY_FIELDS = ("priorityClassRef", "priority")
SPEC_ANNOTATION = "fleetq.dev/multikueue-spec-fingerprint"
# Fields a worker manages itself on its copy, never compared.
WORKER_OWNED_SPEC_FIELDS = ("preemptionGates",)


def is_ours(obj: Json, origin: str) -> bool:
    """Whether a worker object carries our origin label (else it must never be touched)."""
    labels = metadata(obj).get("labels") or {}
    return isinstance(labels, Mapping) and labels.get(MULTIKUEUE_ORIGIN_LABEL) == origin


def remote_workload(local: Json, origin: str) -> dict[str, Any]:
    """The Workload to create on a worker for the manager's `local`."""
    meta = metadata(local)
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != JOB_UID_LABEL}
    labels[MULTIKUEUE_ORIGIN_LABEL] = origin
    out_meta: dict[str, Any] = {
        "name": meta.get("name"),
        "namespace": meta.get("namespace"),
        "labels": labels,
    }
    annotations = dict(meta.get("annotations") or {})
    annotations[SPEC_ANNOTATION] = spec_fingerprint(local)
    out_meta["annotations"] = annotations
    return {
        "apiVersion": local.get("apiVersion", "kueue.x-k8s.io/v1beta2"),
        "kind": "Workload",
        "metadata": out_meta,
        "spec": copy.deepcopy(dict(spec(local))),
    }


def _normalized(value: Any) -> Any:
    """Drop None and empty containers, recursively, so absent and empty compare equal."""
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            normal = _normalized(item)
            if normal is not None and normal != {} and normal != []:
                out[key] = normal
        return out
    if isinstance(value, list):
        return [_normalized(item) for item in value]
    return value


def _comparable(workload_spec: Json, *, without: tuple[str, ...] = ()) -> Any:
    body = {k: v for k, v in workload_spec.items() if k not in WORKER_OWNED_SPEC_FIELDS}
    for name in without:
        body.pop(name, None)
    # The manager's own switch: deactivating evicts the manager Workload, and the eviction
    # (not a spec change) is what reaches the copy, as DeactivationTarget.
    body.pop("active", None)
    return _normalized(body)


class SpecDrift(enum.Enum):
    IN_SYNC = "in-sync"
    PRIORITY = "priority"
    """Only the priority differs: patch the copy in place."""
    OTHER = "other"
    """Anything else differs: replace the copy."""


def spec_fingerprint(local: Json) -> str:
    """A digest of the manager's spec, priority aside (stable across dict orders)."""
    body = orjson.dumps(
        _comparable(spec(local), without=PRIORITY_FIELDS), option=orjson.OPT_SORT_KEYS
    )
    return hashlib.sha256(body).hexdigest()[:32]


def _priority(workload_spec: Json) -> Any:
    return _normalized({name: workload_spec.get(name) for name in PRIORITY_FIELDS})


def spec_drift(local: Json, remote: Json) -> SpecDrift:
    local_spec, remote_spec = spec(local), spec(remote)
    sent = (metadata(remote).get("annotations") or {}).get(SPEC_ANNOTATION)
    if sent:
        if sent != spec_fingerprint(local):
            return SpecDrift.OTHER
        if _priority(local_spec) != _priority(remote_spec):
            return SpecDrift.PRIORITY
        return SpecDrift.IN_SYNC
    if _comparable(local_spec) == _comparable(remote_spec):
        return SpecDrift.IN_SYNC
    if _comparable(local_spec, without=PRIORITY_FIELDS) == _comparable(
        remote_spec, without=PRIORITY_FIELDS
    ):
        return SpecDrift.PRIORITY
    return SpecDrift.OTHER


def priority_patch(local: Json) -> dict[str, Any]:
    """The merge patch that gives a copy the manager's priority (absent fields removed)."""
    local_spec = spec(local)
    return {"spec": {name: local_spec.get(name) for name in PRIORITY_FIELDS}}

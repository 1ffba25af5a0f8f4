"""What every builder shares: object metadata, spec/status merging, conditions, copying.

A builder keeps all of its state in one dict, `self._obj`, already in the JSON shape the
apiserver takes; its methods edit that dict and return the builder, and `.obj()` hands out
a deep copy. So `from_obj` can wrap any manifest (one a helper returned, one read back
from a cluster) and one builder can stamp out several objects.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, ClassVar, Self

Json = dict[str, Any]

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
PREBUILT_WORKLOAD_LABEL = "kueue.x-k8s.io/prebuilt-workload-name"
MULTIKUEUE_ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"
KUEUE_API_VERSION = "kueue.x-k8s.io/v1beta2"
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"


def without_none(**fields: Any) -> Json:
    """The fields (wire names) whose value is not `None`, in the order given: optional
    fields a caller did not set stay out of the manifest."""
    return {key: value for key, value in fields.items() if value is not None}


def owner_reference(
    api_version: str,
    kind: str,
    name: str,
    uid: str,
    *,
    controller: bool | None = True,
    block_owner_deletion: bool | None = None,
) -> Json:
    """An ownerReferences entry; `None` leaves a flag out (as clients that omit it do)."""
    return without_none(
        apiVersion=api_version,
        kind=kind,
        name=name,
        uid=uid,
        controller=controller,
        blockOwnerDeletion=block_owner_deletion,
    )


class DictBuilder:
    """Keeps the JSON being built in `self._obj`; hands out copies of it."""

    _obj: Json

    @classmethod
    def from_obj(cls, obj: Mapping[str, Any]) -> Self:
        """A builder over a copy of an existing dict, to change a few fields of it."""
        builder = cls.__new__(cls)
        builder._obj = copy.deepcopy(dict(obj))
        return builder

    def obj(self) -> Json:
        """The dict: a fresh deep copy, so later edits never leak into it."""
        return copy.deepcopy(self._obj)

    def clone(self) -> Self:
        """An independent builder with the same dict, to branch variants off one base."""
        return type(self).from_obj(self._obj)


class ObjectBuilder(DictBuilder):
    """Base of every kind's builder: `apiVersion`, `kind` and `metadata.name` from the start.

    Maps set through `labels`, `annotations`, `spec` and `status` are merged into what is
    there and created even when empty, so a builder can reproduce `"annotations": {}`
    exactly where a test sent that. `set` is the escape hatch for a field no method covers.
    """

    api_version: ClassVar[str]
    kind: ClassVar[str]

    def __init__(self, name: str, namespace: str | None = None) -> None:
        self._obj = {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "metadata": without_none(name=name, namespace=namespace),
        }

    # -- plumbing for subclasses ---------------------------------------------------------
    def _at(self, *path: str) -> Json:
        """The dict at `path` below the object, created (empty) where missing."""
        node = self._obj
        for key in path:
            node = node.setdefault(key, {})
        return node

    def set(self, path: str, value: Any) -> Self:
        """Set a dotted path (`"spec.backoffLimit"`) to a copy of `value`; for one-off fields.

        Keys that contain dots (labels, annotations) go through their own methods."""
        *parents, last = path.split(".")
        self._at(*parents)[last] = copy.deepcopy(value)
        return self

    # -- metadata ------------------------------------------------------------------------
    def namespace(self, namespace: str) -> Self:
        self._obj["metadata"]["namespace"] = namespace
        return self

    def labels(self, labels: Mapping[str, str]) -> Self:
        """Merge `labels` in; `labels({})` still writes an empty map."""
        self._at("metadata", "labels").update(labels)
        return self

    def label(self, key: str, value: str) -> Self:
        return self.labels({key: value})

    def annotations(self, annotations: Mapping[str, str]) -> Self:
        """Merge `annotations` in; `annotations({})` still writes an empty map."""
        self._at("metadata", "annotations").update(annotations)
        return self

    def annotation(self, key: str, value: str) -> Self:
        return self.annotations({key: value})

    def finalizers(self, *finalizers: str) -> Self:
        """Replace the finalizers; with none given, an explicit empty list."""
        self._obj["metadata"]["finalizers"] = list(finalizers)
        return self

    def uid(self, uid: str) -> Self:
        self._obj["metadata"]["uid"] = uid
        return self

    def resource_version(self, version: str) -> Self:
        self._obj["metadata"]["resourceVersion"] = version
        return self

    def creation_timestamp(self, timestamp: str) -> Self:
        self._obj["metadata"]["creationTimestamp"] = timestamp
        return self

    def owner_reference(self, ref: Mapping[str, Any]) -> Self:
        """Append a ready-made ownerReferences entry (see `owner_reference()`)."""
        self._obj["metadata"].setdefault("ownerReferences", []).append(dict(ref))
        return self

    def owned_by(
        self, api_version: str, kind: str, name: str, uid: str, **flags: bool | None
    ) -> Self:
        """Append an owner; `flags` as for `owner_reference()` (by default the controller,
        as a job's Workload has it)."""
        return self.owner_reference(owner_reference(api_version, kind, name, uid, **flags))

    def multikueue_origin(self, origin: str) -> Self:
        """The label the MultiKueue manager puts on the copies it makes on a worker."""
        return self.label(MULTIKUEUE_ORIGIN_LABEL, origin)

    # -- spec and status -----------------------------------------------------------------
    def spec(self, **fields: Any) -> Self:
        """Merge fields (wire names) into spec; `spec()` alone writes an empty spec."""
        self._at("spec").update(copy.deepcopy(fields))
        return self

    def status(self, **fields: Any) -> Self:
        """Merge fields (wire names) into status, for objects handed to code as if read."""
        self._at("status").update(copy.deepcopy(fields))
        return self

    def conditions(self, *conditions: Mapping[str, Any]) -> Self:
        """Append ready-made conditions; with none given, an explicit empty list."""
        found = self._at("status").setdefault("conditions", [])
        found.extend(dict(c) for c in conditions)
        return self

    def condition(
        self,
        type_: str,
        status: str = "True",
        *,
        reason: str | None = None,
        message: str | None = None,
        last_transition_time: str | None = None,
    ) -> Self:
        """Append one status condition; fields left `None` are left out of it."""
        return self.conditions(
            without_none(
                type=type_,
                status=status,
                reason=reason,
                message=message,
                lastTransitionTime=last_transition_time,
            )
        )

"""Validating admission for kueue.x-k8s.io objects: the rules their CRDs cannot express.

The CRD schemas (with their CEL rules) already run in the apiserver; this adds what only
code can check, through the same `core.api.validation` the CLI uses: `validate` on create,
`validate_update` (what may change, and how) on update, plus the rules a feature gate
turns on (`GatedRules`: the ConcurrentAdmission policy's, as upstream checks them only
with its gate). An object that does not even decode into its type is denied with the
field path msgspec names, never a crash.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from core.api import codec
from core.api.api_struct import ApiStruct
from core.api.cluster_queue import ClusterQueue
from core.api.registry import KindInfo
from core.api.validation import validate, validate_update
from core.api.validation.field_errors import ROOT, FieldError, decode_error, invalid
from core.api.validation.queues import (
    validate_concurrent_admission_policy,
    validate_concurrent_admission_policy_update,
)
from integrations.framework.admission_review import Operation, admission_response, parse_request


@dataclass(frozen=True, slots=True)
class GatedRules:
    """Rules on top of `validate`/`validate_update` that feature gates turn on, by type."""

    create: Mapping[type[Any], Callable[[Any], list[FieldError]]] = field(default_factory=dict)
    update: Mapping[type[Any], Callable[[Any, Any], list[FieldError]]] = field(default_factory=dict)


def gated_rules(*, concurrent_admission: bool) -> GatedRules:
    if not concurrent_admission:
        return GatedRules()
    return GatedRules(
        create={ClusterQueue: validate_concurrent_admission_policy},
        update={ClusterQueue: validate_concurrent_admission_policy_update},
    )


def wrong_kind_error(obj: Mapping[str, Any], kind: str) -> FieldError | None:
    """An error when a webhook is sent an object of another kind (a misrouted call)."""
    sent = obj.get("kind")
    if sent in (None, kind):
        return None
    return invalid(ROOT.child("kind"), f"this webhook handles {kind} objects, not {sent}")


def _decode(info: KindInfo, data: Mapping[str, Any]) -> ApiStruct:
    return codec.decode(info.type, data)


def review_kueue_object(
    info: KindInfo, review: Mapping[str, Any], gated: GatedRules | None = None
) -> dict[str, Any]:
    """Answer a validating AdmissionReview for an object of kind `info`."""
    request = parse_request(review)
    if request.object is None or request.operation not in (Operation.CREATE, Operation.UPDATE):
        return admission_response(review)
    wrong_kind = wrong_kind_error(request.object, info.kind)
    if wrong_kind is not None:
        return admission_response(review, errors=[wrong_kind])
    try:
        new = _decode(info, request.object)
    except msgspec.ValidationError as error:
        return admission_response(review, errors=[decode_error(error)])
    old: ApiStruct | None = None
    if request.operation is Operation.UPDATE and request.old_object is not None:
        # An old object that no longer decodes (stored before a schema change) must not
        # lock the object forever: judge the new one on its own then.
        with contextlib.suppress(msgspec.ValidationError):
            old = _decode(info, request.old_object)
    errors = validate(new) if old is None else validate_update(old, new)
    if gated is not None:
        if old is None:
            create = gated.create.get(type(new))
            if create is not None:
                errors = [*errors, *create(new)]
        else:
            update = gated.update.get(type(new))
            if update is not None:
                errors = [*errors, *update(old, new)]
    return admission_response(review, errors=errors)

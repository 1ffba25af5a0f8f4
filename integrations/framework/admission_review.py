"""admission.k8s.io/v1 AdmissionReview: reading the request, writing the response.

The webhook server hands each request body here and sends back what comes out, so the
whole admission decision is plain data in, plain data out. Responses follow what
controller-runtime sends upstream: a denial is HTTP 403 "Forbidden" with the field
errors joined the way Kubernetes aggregates them (one error alone, several as
`[first, second]`), and a mutation is a base64 JSON Patch.
"""

from __future__ import annotations

import base64
import enum
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from core.api.validation.field_errors import FieldError
from integrations.framework.json_patch import JsonPatchOp

__all__ = [
    "ADMISSION_API_VERSION",
    "AdmissionRequest",
    "BadAdmissionReview",
    "Operation",
    "admission_response",
    "aggregate_message",
    "parse_request",
]

ADMISSION_API_VERSION: Final = "admission.k8s.io/v1"


class Operation(enum.StrEnum):
    """The operation an admission request is about."""

    CREATE = "CREATE"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    CONNECT = "CONNECT"


class BadAdmissionReview(ValueError):
    """The body is not an AdmissionReview request the webhook can answer."""


@dataclass(frozen=True, slots=True)
class AdmissionRequest:
    """The parts of `request` a webhook decides on."""

    uid: str
    operation: Operation
    namespace: str
    object: dict[str, Any] | None
    old_object: dict[str, Any] | None


def parse_request(review: Mapping[str, Any]) -> AdmissionRequest:
    """The request of an AdmissionReview body; raises BadAdmissionReview if malformed."""
    request = review.get("request")
    if not isinstance(request, Mapping):
        raise BadAdmissionReview("AdmissionReview has no request")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise BadAdmissionReview("AdmissionReview request has no uid")
    try:
        operation = Operation(str(request.get("operation")))
    except ValueError as error:
        raise BadAdmissionReview(
            f"unknown operation {request.get('operation')!r} in AdmissionReview request"
        ) from error
    obj, old = request.get("object"), request.get("oldObject")
    return AdmissionRequest(
        uid=uid,
        operation=operation,
        namespace=str(request.get("namespace") or ""),
        object=dict(obj) if isinstance(obj, Mapping) else None,
        old_object=dict(old) if isinstance(old, Mapping) else None,
    )


def aggregate_message(errors: Sequence[FieldError]) -> str:
    """Errors joined as Kubernetes joins an error list."""
    texts = [str(error) for error in errors]
    return texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"


def admission_response(
    review: Mapping[str, Any],
    *,
    patch: Sequence[JsonPatchOp] = (),
    errors: Sequence[FieldError] = (),
    warnings: Sequence[str] = (),
) -> dict[str, Any]:
    """The AdmissionReview to answer `review` with: denied on errors, else allowed (+patch)."""
    request = review.get("request")
    uid = request.get("uid", "") if isinstance(request, Mapping) else ""
    response: dict[str, Any] = {"uid": uid}
    if errors:
        response["allowed"] = False
        response["status"] = {
            "code": 403,
            "reason": "Forbidden",
            "message": aggregate_message(errors),
        }
    else:
        response["allowed"] = True
        response["status"] = {"code": 200}
        if patch:
            encoded = json.dumps(list(patch), separators=(",", ":")).encode()
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(encoded).decode()
    if warnings:
        response["warnings"] = list(warnings)
    return {
        "apiVersion": str(review.get("apiVersion") or ADMISSION_API_VERSION),
        "kind": "AdmissionReview",
        "response": response,
    }

"""Answering an apiextensions.k8s.io/v1 ConversionReview.

The apiserver sends objects of one kind and the version it wants them in; the answer
holds every object converted, in order, or a Failure saying which object could not be
(then the apiserver fails the request with that message rather than store half of it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from core.api.conversion.objects import ConversionError, convert_object

CONVERSION_REVIEW_API_VERSION: Final = "apiextensions.k8s.io/v1"


class BadConversionReview(ValueError):
    """A body that is not a ConversionReview request: there is no uid to answer to."""


def _response(uid: str, **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": CONVERSION_REVIEW_API_VERSION,
        "kind": "ConversionReview",
        "response": {"uid": uid, **fields},
    }


def convert_review(review: Mapping[str, Any]) -> dict[str, Any]:
    """The ConversionReview answering `review`'s request."""
    if review.get("kind") != "ConversionReview":
        raise BadConversionReview(f"expected kind ConversionReview, got {review.get('kind')!r}")
    request = review.get("request")
    if not isinstance(request, Mapping) or not request.get("uid"):
        raise BadConversionReview("ConversionReview has no request with a uid")
    uid = str(request["uid"])
    desired = request.get("desiredAPIVersion")
    objects = request.get("objects")
    if not isinstance(desired, str) or not isinstance(objects, list):
        return _response(
            uid,
            convertedObjects=[],
            result={
                "status": "Failure",
                "message": "request needs desiredAPIVersion and a list of objects",
            },
        )
    try:
        converted = [
            convert_object(obj if isinstance(obj, Mapping) else {}, desired) for obj in objects
        ]
    except ConversionError as error:
        return _response(
            uid, convertedObjects=[], result={"status": "Failure", "message": str(error)}
        )
    return _response(uid, convertedObjects=converted, result={"status": "Success"})

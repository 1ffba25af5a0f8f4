"""ConversionReview answers: every object converted in order, or one Failure that says why."""

from __future__ import annotations

import pytest

from core.api.conversion.review import BadConversionReview, convert_review


def review(desired: str, *objects: dict[str, object]) -> dict[str, object]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "u-1", "desiredAPIVersion": desired, "objects": list(objects)},
    }


def lq(version: str, name: str) -> dict[str, object]:
    return {
        "apiVersion": f"kueue.x-k8s.io/{version}",
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": "ns"},
        "status": {"flavorUsage": []} if version == "v1beta1" else {"flavorsUsage": []},
    }


def test_objects_are_converted_in_order() -> None:
    answer = convert_review(
        review("kueue.x-k8s.io/v1beta2", lq("v1beta1", "a"), lq("v1beta1", "b"))
    )
    response = answer["response"]
    assert answer["kind"] == "ConversionReview"
    assert response["uid"] == "u-1"
    assert response["result"] == {"status": "Success"}
    assert response["convertedObjects"] == [lq("v1beta2", "a"), lq("v1beta2", "b")]


def test_one_unconvertible_object_fails_the_review_naming_it() -> None:
    answer = convert_review(review("kueue.x-k8s.io/v1", lq("v1beta1", "a")))
    result = answer["response"]["result"]
    assert result["status"] == "Failure"
    assert "LocalQueue ns/a" in result["message"]
    assert answer["response"]["convertedObjects"] == []


def test_a_request_without_objects_fails_with_a_message() -> None:
    answer = convert_review(
        {"kind": "ConversionReview", "request": {"uid": "u", "desiredAPIVersion": "x"}}
    )
    assert answer["response"]["result"]["status"] == "Failure"


@pytest.mark.parametrize(
    "body",
    [
        {"kind": "AdmissionReview"},
        {"kind": "ConversionReview"},
        {"kind": "ConversionReview", "request": {}},
    ],
)
def test_a_body_that_is_not_a_review_request_is_refused(body: dict[str, object]) -> None:
    with pytest.raises(BadConversionReview):
        convert_review(body)

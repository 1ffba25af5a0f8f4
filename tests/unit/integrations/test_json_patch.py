"""JSON Patch: a diff applied to the old document gives exactly the new one."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from integrations.framework.json_patch import JsonPatchError, apply_patch, diff, pointer

json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=5)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=12,
)
json_objects = st.dictionaries(st.text(max_size=4), json_values, max_size=5)


def _typed(value: Any) -> Any:
    """The value with every scalar tagged by its type, so True and 1 compare unequal."""
    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_typed(item) for item in value]
    return (type(value).__name__, value)


@given(old=json_objects, new=json_objects)
def test_applying_the_diff_turns_old_into_new(old: dict[str, Any], new: dict[str, Any]) -> None:
    assert _typed(apply_patch(old, diff(old, new))) == _typed(new)


@given(doc=json_objects)
def test_equal_documents_have_an_empty_diff(doc: dict[str, Any]) -> None:
    assert diff(doc, doc) == []


def test_diff_names_each_change_with_an_escaped_pointer() -> None:
    old = {"metadata": {"labels": {"a/b": "1", "gone": "x"}}, "spec": {"suspend": False}}
    new = {"metadata": {"labels": {"a/b": "2", "c~d": "3"}}, "spec": {"suspend": True}}
    assert diff(old, new) == [
        {"op": "remove", "path": "/metadata/labels/gone"},
        {"op": "replace", "path": "/metadata/labels/a~1b", "value": "2"},
        {"op": "add", "path": "/metadata/labels/c~0d", "value": "3"},
        {"op": "replace", "path": "/spec/suspend", "value": True},
    ]


def test_a_boolean_is_not_the_number_one() -> None:
    assert diff({"x": 1}, {"x": True}) == [{"op": "replace", "path": "/x", "value": True}]


def test_lists_are_replaced_whole() -> None:
    old = {"tolerations": [{"key": "a"}]}
    new = {"tolerations": [{"key": "a"}, {"key": "b"}]}
    assert diff(old, new) == [
        {"op": "replace", "path": "/tolerations", "value": [{"key": "a"}, {"key": "b"}]}
    ]


def test_pointer_escapes_tilde_before_slash() -> None:
    assert pointer("metadata", "labels", "kueue.x-k8s.io/queue-name") == (
        "/metadata/labels/kueue.x-k8s.io~1queue-name"
    )
    assert pointer("a~/b", 0) == "/a~0~1b/0"


def test_apply_leaves_its_input_untouched() -> None:
    doc = {"spec": {"list": [1, 2]}}
    apply_patch(doc, [{"op": "add", "path": "/spec/list/-", "value": 3}])
    assert doc == {"spec": {"list": [1, 2]}}


@pytest.mark.parametrize(
    ("op", "message"),
    [
        ({"op": "remove", "path": "/missing"}, "no member 'missing'"),
        ({"op": "replace", "path": "/spec/list/5", "value": 0}, "out of range"),
        ({"op": "test", "path": "/spec/name", "value": "other"}, "test failed"),
        ({"op": "add", "path": "spec", "value": 0}, "must start with '/'"),
        ({"op": "move", "path": "/spec"}, "unsupported operation"),
    ],
)
def test_apply_rejects_patches_that_do_not_fit(op: Any, message: str) -> None:
    with pytest.raises(JsonPatchError, match=message):
        apply_patch({"spec": {"list": [1], "name": "x"}}, [op])

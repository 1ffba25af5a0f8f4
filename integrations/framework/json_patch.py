"""RFC 6902 JSON Patch between two JSON documents, and applying one.

Mutating webhooks answer with a patch rather than an object, and controllers that want
to write only what changed can send the same patch. Integrations therefore compute the
desired object as a whole and let `diff` say how it differs: the mutation logic never
builds patch paths by hand. Lists are replaced whole; an RFC 6902 list diff would save
bytes but not change the result, and job lists (tolerations, gates) are short.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypedDict

__all__ = ["JsonPatchError", "JsonPatchOp", "apply_patch", "diff", "pointer"]


class JsonPatchOp(TypedDict, total=False):
    """One operation; `value` is present for add, replace and test."""

    op: Literal["add", "remove", "replace", "test"]
    path: str
    value: Any


class JsonPatchError(ValueError):
    """The patch does not fit the document (missing path, failed test, bad operation)."""


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def pointer(*tokens: str | int) -> str:
    """The JSON Pointer of a path, e.g. ("metadata", "labels", "a/b") → /metadata/labels/a~1b."""
    return "".join("/" + _escape(str(token)) for token in tokens)


def _same(a: Any, b: Any) -> bool:
    """JSON equality: unlike Python's `==`, `true` is not `1` and a list is not a tuple."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers):
        return isinstance(a, bool) == isinstance(b, bool) and a == b
    return type(a) is type(b) and a == b


def diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[JsonPatchOp]:
    """Operations that turn `old` into `new` (empty when they are equal)."""
    ops: list[JsonPatchOp] = []
    _diff_objects(old, new, "", ops)
    return ops


def _diff_objects(
    old: Mapping[str, Any], new: Mapping[str, Any], at: str, ops: list[JsonPatchOp]
) -> None:
    for key in old:
        if key not in new:
            ops.append({"op": "remove", "path": at + pointer(key)})
    for key, value in new.items():
        path = at + pointer(key)
        if key not in old:
            ops.append({"op": "add", "path": path, "value": copy.deepcopy(value)})
        elif isinstance(old[key], Mapping) and isinstance(value, Mapping):
            _diff_objects(old[key], value, path, ops)
        elif not _same(old[key], value):
            ops.append({"op": "replace", "path": path, "value": copy.deepcopy(value)})


def _split(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise JsonPatchError(f"path {path!r} must start with '/'")
    return [_unescape(token) for token in path[1:].split("/")]


def _child(container: Any, token: str, path: str) -> Any:
    if isinstance(container, dict):
        if token not in container:
            raise JsonPatchError(f"path {path!r}: no member {token!r}")
        return container[token]
    if isinstance(container, list):
        return container[_index(container, token, path, allow_end=False)]
    raise JsonPatchError(f"path {path!r}: cannot descend into a {type(container).__name__}")


def _index(container: Sequence[Any], token: str, path: str, *, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise JsonPatchError(f"path {path!r}: {token!r} is not an array index")
    index = int(token)
    limit = len(container) + (1 if allow_end else 0)
    if index >= limit:
        raise JsonPatchError(f"path {path!r}: index {index} is out of range")
    return index


def apply_patch(document: Mapping[str, Any], ops: Sequence[JsonPatchOp]) -> dict[str, Any]:
    """A patched copy of `document`; the input is left untouched."""
    result: dict[str, Any] = copy.deepcopy(dict(document))
    for op in ops:
        result = _apply_one(result, op)
    return result


def _apply_one(document: dict[str, Any], op: JsonPatchOp) -> dict[str, Any]:
    kind, path = op.get("op"), op.get("path", "")
    tokens = _split(path)
    if not tokens:
        if kind in ("add", "replace"):
            value = copy.deepcopy(op["value"])
            if not isinstance(value, dict):
                raise JsonPatchError("the whole document must stay an object")
            return value
        raise JsonPatchError(f"operation {kind!r} on the whole document is not supported")
    parent: Any = document
    for token in tokens[:-1]:
        parent = _child(parent, token, path)
    last = tokens[-1]
    if kind == "test":
        if not _same(_child(parent, last, path), op.get("value")):
            raise JsonPatchError(f"test failed at {path!r}")
    elif kind == "remove":
        _child(parent, last, path)
        if isinstance(parent, dict):
            del parent[last]
        else:
            del parent[_index(parent, last, path, allow_end=False)]
    elif kind == "replace":
        _child(parent, last, path)
        if isinstance(parent, dict):
            parent[last] = copy.deepcopy(op["value"])
        else:
            parent[_index(parent, last, path, allow_end=False)] = copy.deepcopy(op["value"])
    elif kind == "add":
        if isinstance(parent, dict):
            parent[last] = copy.deepcopy(op["value"])
        elif isinstance(parent, list):
            parent.insert(_index(parent, last, path, allow_end=True), copy.deepcopy(op["value"]))
        else:
            raise JsonPatchError(f"path {path!r}: parent is not an object or array")
    else:
        raise JsonPatchError(f"unsupported operation {kind!r}")
    return document

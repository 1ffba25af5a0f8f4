"""Schema errors an update did not cause are let through, as the apiserver does.

Kubernetes ratchets CRD validation: on update, a value that fails the schema but is the
same as in the stored object is accepted, so a schema that became stricter never locks an
object stored before (its status can still be written, its other fields still changed).
The webhooks run the same schema checks in Python (`schema_rules`), so they must ratchet
the same way, or a Workload stored with a pod template the new schema refuses could not
even be told, in its status, why it cannot be queued.
"""

from __future__ import annotations

import re
from typing import Any

from core.api import codec
from core.api.api_struct import ApiStruct
from core.api.validation.field_errors import FieldError

_STEP = re.compile(r"([^.\[\]]+)|\[([^\]]*)\]")
_MISSING = object()


def _step(value: Any, name: str | None, key: str | None) -> Any:
    if name is not None:
        return value.get(name, _MISSING) if isinstance(value, dict) else _MISSING
    assert key is not None
    if isinstance(value, list) and key.isdigit():
        position = int(key)
        return value[position] if position < len(value) else _MISSING
    if isinstance(value, dict) and key != "...":
        return value.get(key, _MISSING)
    return _MISSING


def unchanged_at(old: Any, new: Any, path: str) -> bool:
    """True when `path` holds the same value in both (or, where it stops existing in
    either, the deepest field above it that both have is the same)."""
    if path == "<root>":
        return bool(old == new)
    for match in _STEP.finditer(path):
        old_next = _step(old, match[1], match[2])
        new_next = _step(new, match[1], match[2])
        if old_next is _MISSING or new_next is _MISSING:
            break
        old, new = old_next, new_next
    return bool(old == new)


def new_errors(old: ApiStruct, new: ApiStruct, errors: list[FieldError]) -> list[FieldError]:
    """The schema errors of `new` that its update from `old` introduced."""
    if not errors:
        return errors
    old_data, new_data = codec.to_builtins(old), codec.to_builtins(new)
    return [error for error in errors if not unchanged_at(old_data, new_data, error.path)]

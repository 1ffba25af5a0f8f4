"""Reading status conditions of objects as the synchronous client returns them (dicts)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.api.json_types import JsonDict


def condition_of(obj: Mapping[str, Any] | None, type_: str) -> JsonDict | None:
    for entry in ((obj or {}).get("status") or {}).get("conditions") or ():
        if entry.get("type") == type_:
            return dict(entry)
    return None


def is_true(obj: Mapping[str, Any] | None, type_: str) -> bool:
    found = condition_of(obj, type_)
    return found is not None and found.get("status") == "True"

"""The field manager name the hub writes under, so `managedFields` shows who owns what."""

from __future__ import annotations

from typing import Final

FIELD_MANAGER: Final = "fleetq-hub"

"""The name of the Workload a job gets: readable, unique per job, stable across restarts.

Upstream derives it from the job's kind and name plus a short hash of kind, group, name
and UID, so a job deleted and recreated under the same name gets a different Workload
name, and a hub restarted mid-way recomputes the very same name (creating the Workload
twice is then a harmless AlreadyExists). fleetq uses the same recipe, so the names match
upstream's character for character.

The default length limit is 63 (upstream's `ShortWorkloadNames` mode): the name is also
used as a label value, which may not be longer.
"""

from __future__ import annotations

import hashlib
from typing import Final

__all__ = [
    "HASH_LENGTH",
    "LONG_MAX_WORKLOAD_NAME_LENGTH",
    "SHORT_MAX_WORKLOAD_NAME_LENGTH",
    "workload_name_for_owner",
]

HASH_LENGTH: Final = 5
SHORT_MAX_WORKLOAD_NAME_LENGTH: Final = 63
LONG_MAX_WORKLOAD_NAME_LENGTH: Final = 253


def workload_name_for_owner(
    *,
    owner_name: str,
    owner_uid: str,
    owner_kind: str,
    owner_group: str,
    extra: str = "",
    max_length: int = SHORT_MAX_WORKLOAD_NAME_LENGTH,
) -> str:
    """`<kind>-<name>` cut to fit, then `-` and five hex digits of the owner's hash.

    `extra` (for example a generation) joins the hash only, so elastic jobs can get a new
    Workload per scale-up while the readable prefix stays the same.
    """
    prefix = f"{owner_kind.lower()}-{owner_name}"[: max_length - 1 - HASH_LENGTH]
    parts = [owner_kind, owner_group, owner_name, owner_uid]
    if extra:
        parts.append(extra)
    digest = hashlib.sha1("\n".join(parts).encode(), usedforsecurity=False).hexdigest()
    return f"{prefix}-{digest[:HASH_LENGTH]}"

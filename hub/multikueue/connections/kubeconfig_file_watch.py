"""Notice when a kubeconfig file (Path source) changes, so its worker reconnects with it.

Polling `stat`, not inotify: it needs no extra dependency, sees atomic replacements and
the symlink swaps Kubernetes uses for mounted Secrets (the inode changes), and costs one
stat per file per interval. A file seen for the first time is reported once, so a change
between the controller's read and the first poll is never missed; reports are only hints:
the controller re-reads the file and compares fingerprints.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass

Signature = tuple[int, int, int, int] | None
"""(device, inode, mtime ns, size) of the file, or None when it cannot be read."""


@dataclass(slots=True)
class _Tracked:
    location: str
    signature: Signature
    seen: bool = False


class KubeconfigFileWatch:
    """Tracks one file per MultiKueueCluster; `run` reports clusters whose file changed."""

    def __init__(self, interval_seconds: float = 2.0) -> None:
        self.interval_seconds = interval_seconds
        self._tracked: dict[str, _Tracked] = {}

    def track(self, cluster: str, location: str) -> None:
        current = self._tracked.get(cluster)
        if current is None or current.location != location:
            self._tracked[cluster] = _Tracked(location, None)

    def forget(self, cluster: str) -> None:
        self._tracked.pop(cluster, None)

    def __contains__(self, cluster: object) -> bool:
        return cluster in self._tracked

    async def run(self, on_change: Callable[[str], None]) -> None:
        """Poll until cancelled."""
        while True:
            await asyncio.sleep(self.interval_seconds)
            if not self._tracked:
                continue
            snapshot = {name: entry.location for name, entry in self._tracked.items()}
            signatures = await asyncio.to_thread(_signatures, snapshot)
            for cluster, signature in signatures.items():
                entry = self._tracked.get(cluster)
                if entry is None or entry.location != snapshot[cluster]:
                    continue  # forgotten or re-pointed meanwhile
                if not entry.seen or entry.signature != signature:
                    entry.seen, entry.signature = True, signature
                    on_change(cluster)


def file_signature(location: str) -> Signature:
    try:
        stat = os.stat(location)
    except OSError:
        return None
    return (stat.st_dev, stat.st_ino, stat.st_mtime_ns, stat.st_size)


def _signatures(locations: dict[str, str]) -> dict[str, Signature]:
    return {cluster: file_signature(location) for cluster, location in locations.items()}

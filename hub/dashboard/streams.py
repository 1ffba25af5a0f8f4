"""Live updates are long requests, so each user gets only a few at once.

Upstream KueueViz let any client open WebSockets without limit; here every open event
stream counts against its user, and one more than `per_user` is refused (429) until one
closes. The count is per authenticated user name, so one user's many tabs cannot starve
others.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

DEFAULT_STREAMS_PER_USER = 4


class TooManyStreams(Exception):
    pass


class StreamLimiter:
    def __init__(self, per_user: int = DEFAULT_STREAMS_PER_USER) -> None:
        self.per_user = per_user
        self._open: dict[str, int] = {}

    def open_for(self, user: str) -> int:
        return self._open.get(user, 0)

    @contextlib.contextmanager
    def stream(self, user: str) -> Iterator[None]:
        if self._open.get(user, 0) >= self.per_user:
            raise TooManyStreams(user)
        self._open[user] = self._open.get(user, 0) + 1
        try:
            yield
        finally:
            left = self._open[user] - 1
            if left:
                self._open[user] = left
            else:
                del self._open[user]

"""Waiting for a local process (hub, agent, upstream Kueue) to answer its readiness URL.

Every launcher in devfleet and bench starts a process, then polls `/readyz` until it
answers 200, giving up with the log's tail when the process exits or takes too long.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Callable


def http_status(url: str, timeout: float = 2.0) -> int:
    """The HTTP status `url` answers with; 0 when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code
    except (urllib.error.URLError, OSError):
        return 0


def wait_until_ready(
    name: str,
    ready_url: str,
    *,
    exit_code: Callable[[], int | None],
    log_excerpt: Callable[[], str],
    error: Callable[[str], Exception],
    timeout: float,
    interval: float = 0.25,
) -> float:
    """Seconds until `ready_url` answered 200; raises `error(...)` if the process exits
    (`exit_code` not None) or `timeout` passes, with `log_excerpt()` in the message."""
    began = time.monotonic()
    while True:
        code = exit_code()
        if code is not None:
            raise error(f"{name} exited ({code}) before it was ready; {log_excerpt()}")
        if http_status(ready_url) == 200:
            return time.monotonic() - began
        if time.monotonic() - began > timeout:
            raise error(f"{name} not ready after {timeout:.0f}s; {log_excerpt()}")
        time.sleep(interval)

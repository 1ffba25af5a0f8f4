"""Stopping a child process started in its own process group, and everything it started;
telling whether a process is still there.

The fleet's out-of-cluster controllers (upstream Kueue, the job operators) run with
`start_new_session=True`, so one signal to the group reaches whatever they spawned.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path


def signal_group(pid: int, signum: int) -> None:
    """Signal the process group led by `pid`; a group already gone is not an error."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signum)


def stop_group(process: subprocess.Popen[bytes], grace: float) -> int | None:
    """SIGTERM the group, SIGKILL it after `grace` seconds (and anything left in it
    either way); the process's exit code."""
    if process.poll() is None:
        signal_group(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            signal_group(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
    signal_group(process.pid, signal.SIGKILL)
    return process.returncode


def is_alive(pid: int) -> bool:
    """Running or stopped, as opposed to gone or a zombie (which holds no sockets)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def wait_gone(pids: Iterable[int], timeout: float, interval: float = 0.05) -> bool:
    """Wait until none of `pids` is alive; False when `timeout` passed first."""
    pending = list(pids)
    deadline = time.monotonic() + timeout
    while any(is_alive(pid) for pid in pending):
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
    return True

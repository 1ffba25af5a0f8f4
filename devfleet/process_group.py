"""Stopping a child process started in its own process group, and everything it started.

The fleet's out-of-cluster controllers (upstream Kueue, JobSet's controller) run with
`start_new_session=True`, so one signal to the group reaches whatever they spawned.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess


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

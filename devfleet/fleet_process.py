"""`fleetq hub` or `fleetq agent` as a child process of set-up code, its output in a file.

The MultiKueue fleet (e2e tests) and the demo start the hub and agents this way: from
this checkout (`python -m cli.main`), in their own session, SIGTERM'd when the parent dies
(Linux), ready when `/readyz` answers 200.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
from pathlib import Path

from devfleet.process_readiness import http_status

REPO = Path(__file__).resolve().parents[1]
PR_SET_PDEATHSIG = 1


class FleetProcessError(RuntimeError):
    """A hub or agent exited while it was expected to run; the message has its log's tail."""


def terminate_with_parent() -> None:
    """In the child: SIGTERM it when the process that started it dies (Linux), so a test
    run killed outright leaves no hub or agent behind."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class FleetProcess:
    """`fleetq hub` or `fleetq agent` as a subprocess, its output in a log file."""

    def __init__(self, label: str, args: list[str], log_path: Path, health_port: int) -> None:
        self.label = label
        self.args = args
        self.log_path = log_path
        self.health_port = health_port
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log_path.open("a") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "cli.main", *self.args],
                cwd=REPO,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
                start_new_session=True,
                preexec_fn=terminate_with_parent,
            )

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    def ready(self) -> bool:
        if self.process is None:
            return False
        if self.process.poll() is not None:
            raise FleetProcessError(
                f"{self.label} exited with {self.process.returncode}:\n{self.log_tail()}"
            )
        return http_status(f"http://127.0.0.1:{self.health_port}/readyz") == 200

    def stop(self, timeout: float = 20.0) -> int | None:
        """SIGTERM, then SIGKILL after `timeout`; the exit code (None if it had to be killed)."""
        process = self.process
        if process is None:
            return None
        if process.poll() is not None:
            return process.returncode
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self) -> None:
        """SIGKILL, as a crash would end it."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    def log_tail(self, lines: int = 40) -> str:
        if not self.log_path.exists():
            return "(no log)"
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

"""A child process whose CPU time and peak memory the benchmark can read at any moment.

Both managers are measured the same way, from outside: CPU seconds (user + system) and
peak RSS from /proc while they run, and from `wait4`'s resource usage when they exit (what
upstream's runner reports for minimalkueue). Each child leads its own process group, so
stopping it also stops anything it started, and a benchmark that fails half-way never
leaves a manager running.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a live process (None once it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces; every field after its ')' is numeric.
    fields = stat.rsplit(")", 1)[1].split()
    utime, stime = int(fields[11]), int(fields[12])
    return (utime + stime) / _CLOCK_TICKS


def peak_rss_kib(pid: int) -> int | None:
    """The process's high-water mark of resident memory (VmHWM), in KiB."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return None


def total_cpu_seconds(pids: Sequence[int]) -> float:
    """Summed CPU seconds of several live processes (the ones gone count as 0)."""
    return sum(cpu_seconds(pid) or 0.0 for pid in pids)


@dataclass(frozen=True, slots=True)
class ExitUsage:
    """What the kernel reports for a reaped child."""

    exit_code: int
    user_s: float
    sys_s: float
    max_rss_kib: int
    wall_s: float

    @property
    def cpu_s(self) -> float:
        return self.user_s + self.sys_s


class MeasuredProcess:
    """Start `argv` in its own session with output to `log_path`; stop it on exit."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        log_path: Path,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.argv = list(argv)
        self.log_path = log_path
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with log_path.open("wb") as log:
            self._popen = subprocess.Popen(
                self.argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=dict(env) if env is not None else None,
                cwd=cwd,
                start_new_session=True,
            )
        self.pid = self._popen.pid
        self.started = time.monotonic()
        self._usage: ExitUsage | None = None

    # -- while running -------------------------------------------------------------------
    def poll(self) -> ExitUsage | None:
        """The exit usage if the process has ended (reaping it), else None."""
        if self._usage is None:
            pid, status, rusage = os.wait4(self.pid, os.WNOHANG)
            if pid == self.pid:
                self._record(status, rusage)
        return self._usage

    def cpu_seconds(self) -> float | None:
        return None if self.poll() else cpu_seconds(self.pid)

    def peak_rss_kib(self) -> int | None:
        return None if self.poll() else peak_rss_kib(self.pid)

    def log_tail(self, chars: int = 2000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    # -- ending --------------------------------------------------------------------------
    def wait(self, timeout: float) -> ExitUsage | None:
        """Wait up to `timeout` seconds for the process to end by itself."""
        deadline = time.monotonic() + timeout
        while self.poll() is None:
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.1)
        return self._usage

    def stop(self, grace: float = 20.0, first_signal: int = signal.SIGINT) -> ExitUsage:
        """Ask the process to stop, kill its group after `grace` seconds, and reap it."""
        if self.poll() is None:
            self._signal_group(first_signal)
            if self.wait(grace) is None:
                self._signal_group(signal.SIGKILL)
                _, status, rusage = os.wait4(self.pid, 0)
                self._record(status, rusage)
        self._signal_group(signal.SIGKILL)  # anything the process started and left behind
        assert self._usage is not None
        return self._usage

    def __enter__(self) -> MeasuredProcess:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop(grace=5.0 if exc is not None else 20.0)

    def _signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signum)

    def _record(self, status: int, rusage: resource.struct_rusage) -> None:
        code = os.waitstatus_to_exitcode(status)
        self._popen.returncode = code  # reaped here, so Popen must not wait for it again
        self._usage = ExitUsage(
            exit_code=code,
            user_s=float(rusage.ru_utime),
            sys_s=float(rusage.ru_stime),
            max_rss_kib=int(rusage.ru_maxrss),
            wall_s=time.monotonic() - self.started,
        )

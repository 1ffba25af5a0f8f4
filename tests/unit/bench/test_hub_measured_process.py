"""A measured child reports its CPU and memory, and always ends when stopped."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

from bench.scheduler.measured_process import MeasuredProcess

BURN_THEN_SLEEP = """
import time
start = time.process_time()
while time.process_time() - start < 0.3:
    pass
block = bytearray(64 * 1024 * 1024)
print("ready", flush=True)
time.sleep(60)
"""

IGNORES_SIGINT = """
import signal, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
print("ready", flush=True)
time.sleep(60)
"""


def _wait_for_ready(process: MeasuredProcess) -> None:
    for _ in range(200):
        if "ready" in process.log_tail():
            return
        assert process.wait(0.05) is None, process.log_tail()
    raise AssertionError("child never got ready")


def test_cpu_and_peak_memory_are_read_live_and_at_exit(tmp_path: Path) -> None:
    process = MeasuredProcess([sys.executable, "-c", BURN_THEN_SLEEP], log_path=tmp_path / "log")
    _wait_for_ready(process)
    live_cpu = process.cpu_seconds()
    live_rss = process.peak_rss_kib()
    assert live_cpu is not None and live_cpu >= 0.25
    assert live_rss is not None and live_rss >= 64 * 1024
    usage = process.stop(grace=5.0, first_signal=signal.SIGTERM)
    assert usage.exit_code == -signal.SIGTERM
    assert usage.cpu_s >= live_cpu
    assert usage.max_rss_kib >= 64 * 1024
    assert process.cpu_seconds() is None  # reaped: nothing left to read


def test_a_child_that_ignores_sigint_is_killed_after_the_grace(tmp_path: Path) -> None:
    with MeasuredProcess([sys.executable, "-c", IGNORES_SIGINT], log_path=tmp_path / "log") as p:
        _wait_for_ready(p)
        usage = p.stop(grace=0.5)
    assert usage.exit_code == -signal.SIGKILL
    assert usage.wall_s < 30

"""Installs a manager's CRDs into a fresh cluster and waits until they are served.

Upstream's runner installs CRDs only into the envtest cluster it starts itself; against
an existing cluster (as here) it expects them in place. Each manager gets its own CRDs:
upstream Kueue's from its module, fleetq's from its chart, as a user would install them.
Server-side apply: upstream's Workload CRD is too large for client-side apply's
last-applied annotation.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from devfleet.toolchain import binary_path


class CrdInstallError(RuntimeError):
    """kubectl failed; the message holds the command and its output."""


def _kubectl(kubeconfig: Path, *args: str, timeout: float) -> str:
    command = [str(binary_path("kubectl")), "--kubeconfig", str(kubeconfig), *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise CrdInstallError(f"timed out after {timeout:.0f}s: {' '.join(command)}") from exc
    if done.returncode != 0:
        output = (done.stdout + done.stderr).strip()[-2000:]
        raise CrdInstallError(
            f"kubectl failed (exit {done.returncode}): {' '.join(args)}\n{output}"
        )
    return done.stdout


def install_crds(kubeconfig: Path, directory: Path, timeout: float = 120.0) -> list[str]:
    """Apply every CRD file in `directory`; return the CRD names once all are Established."""
    files = sorted(directory.glob("*.yaml"))
    if not files:
        raise CrdInstallError(f"no CRD files (*.yaml) in {directory}")
    args = ["apply", "--server-side", "--force-conflicts", "-o", "name"]
    for path in files:
        args += ["-f", str(path)]
    names = [line.strip() for line in _kubectl(kubeconfig, *args, timeout=timeout).splitlines()]
    names = [name for name in names if name]
    _kubectl(
        kubeconfig,
        "wait",
        "--for=condition=Established",
        f"--timeout={int(timeout)}s",
        *names,
        timeout=timeout + 10,
    )
    return names

"""Running a binary that hard-codes a directory without sharing it with its neighbours.

Some tools write to a fixed path (upstream Kueue, v0.17 and v0.19, reads its metrics
certificates from /etc/kueue/metrics/certs, cert-controller writes
/tmp/k8s-webhook-server/...); two of
them on one machine would overwrite each other's files. `private_mounts` gives an argv
prefix that runs the command in a mount namespace of its own (`unshare --mount`, which
needs root, as the fleet's clusters do) with a directory of the run bound over each fixed
path; nothing outside the namespace sees the bind.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path


class PrivateMountError(RuntimeError):
    """The machine lacks what a private mount namespace needs."""


def private_mounts(binds: Sequence[tuple[Path, str]]) -> list[str]:
    """The prefix running a command with each (source, target) bind in place: source
    directories of this run bound over the targets, created where missing."""
    if shutil.which("unshare") is None:
        raise PrivateMountError("`unshare` (util-linux) is needed for a private mount namespace")
    args: list[str] = []
    steps: list[str] = []
    for index, (source, target) in enumerate(binds):
        args += [str(source), target]
        src, dst = f'"${{{2 * index + 1}}}"', f'"${{{2 * index + 2}}}"'
        steps.append(f"mkdir -p {dst} && mount --bind {src} {dst}")
    script = " && ".join([*steps, f"shift {len(args)}", 'exec "$@"'])
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *args]

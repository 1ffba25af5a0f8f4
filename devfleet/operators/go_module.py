"""Where a Go module lives in the module cache: operators' CRDs and manifests are read
from there, never copied into this repository."""

from __future__ import annotations

import functools
import json
import os
import subprocess
from pathlib import Path


class GoModuleError(RuntimeError):
    """The module cannot be located (no `go`, or the module is not served)."""


@functools.cache
def module_dir(module: str, version: str, cwd: Path) -> Path:
    """`module@version` in the Go module cache, downloaded if needed; `cwd` is a wrapper
    module under tools/go that requires it (so go.sum vouches for its content)."""
    env = dict(os.environ, GOTOOLCHAIN=os.environ.get("GOTOOLCHAIN", "local"))
    try:
        done = subprocess.run(
            ["go", "mod", "download", "-json", f"{module}@{version}"],
            cwd=cwd,
            capture_output=True,
            text=True,
            env=env,
            check=False,
            timeout=300,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GoModuleError(f"cannot run `go mod download`: {exc}") from exc
    if done.returncode != 0:
        raise GoModuleError(
            f"cannot locate the {module} {version} module: "
            f"{(done.stdout + done.stderr).strip()[-500:]}"
        )
    return Path(json.loads(done.stdout)["Dir"])

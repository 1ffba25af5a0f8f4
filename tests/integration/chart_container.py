"""A chart's Deployment run as a podman container, given what the kubelet would give its pod.

The pod spec is read from the rendered Deployment, not restated: the container's args
(the image's entrypoint supplies `fleetq`), its env (fieldRefs resolved to the pod's name
and namespace), user and group, read-only root filesystem, no privilege escalation,
dropped capabilities, and its volumes (ConfigMaps written to files and mounted read-only,
emptyDirs as tmpfs). The ServiceAccount's token, CA and namespace are mounted where
client libraries look for them, and KUBERNETES_SERVICE_HOST/PORT name the apiserver, which
the container reaches on the host's network (the fleet's apiservers listen on loopback).

podman runs with image/containers.conf (runc, cgroupfs, no default ulimits), the same
file `make image` uses, so nothing in /etc/containers has to change.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tomllib
import urllib.parse
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
CONTAINERS_CONF = REPO / "image" / "containers.conf"
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
INSTALL_HINT = "apt-get install -y podman buildah runc mmdebstrap (.ci/run does)"
BUILD_TIMEOUT_SECONDS = 1800


def image_version() -> str:
    return str(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"])


def require_podman() -> None:
    """Skip with an instruction on a developer machine without podman; fail under CI."""
    missing = [tool for tool in ("podman", "mmdebstrap", "runc") if shutil.which(tool) is None]
    if not missing:
        return
    message = f"{', '.join(missing)} not installed; {INSTALL_HINT}"
    if os.environ.get("CI"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def podman(
    *args: str, timeout: float = 120, check: bool = True
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CONTAINERS_CONF": str(CONTAINERS_CONF)}
    result = subprocess.run(
        ["podman", *args], capture_output=True, text=True, timeout=timeout, env=env, check=False
    )
    if check and result.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)} exited {result.returncode}: {result.stderr}")
    return result


def build_image() -> str:
    """`make image`'s script (warm: only changed layers rebuild); the image's tag."""
    result = subprocess.run(
        ["bash", str(REPO / "image" / "build.sh")],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_SECONDS,
        check=False,
    )
    assert result.returncode == 0, f"make image failed:\n{result.stdout[-4000:]}\n{result.stderr}"
    return f"localhost/fleetq:{image_version()}"


@dataclass(frozen=True)
class ServiceAccountToken:
    """What the kubelet projects into a pod for its ServiceAccount."""

    token: str
    ca_pem: bytes
    namespace: str

    def write(self, directory: Path) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "token").write_text(self.token)
        (directory / "ca.crt").write_bytes(self.ca_pem)
        (directory / "namespace").write_text(self.namespace)
        directory.chmod(0o755)
        for item in directory.iterdir():
            item.chmod(0o644)  # the container's user is not the host's root
        return directory


def apiserver_env(server: str) -> dict[str, str]:
    """KUBERNETES_SERVICE_HOST/PORT as the kubelet sets them, for the apiserver at `server`."""
    parsed = urllib.parse.urlsplit(server)
    return {
        "KUBERNETES_SERVICE_HOST": str(parsed.hostname),
        "KUBERNETES_SERVICE_PORT": str(parsed.port or 443),
    }


def pod_flags(
    deployment: Mapping[str, Any],
    *,
    pod_name: str,
    namespace: str,
    config_maps: Mapping[str, Mapping[str, str]],
    workdir: Path,
) -> tuple[list[str], list[str]]:
    """(podman run flags, container args) of the Deployment's one container."""
    spec = deployment["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    pod_security = spec.get("securityContext") or {}
    security = container.get("securityContext") or {}
    user = security.get("runAsUser", pod_security.get("runAsUser"))
    group = security.get("runAsGroup", pod_security.get("runAsGroup"))
    assert user is not None and group is not None, "the chart pins no user"
    flags = ["--network=host", f"--hostname={pod_name}", f"--user={user}:{group}"]
    if security.get("readOnlyRootFilesystem"):
        # Only the chart's volumes are writable (podman would add its own tmpfs otherwise).
        flags += ["--read-only", "--read-only-tmpfs=false"]
    if security.get("allowPrivilegeEscalation") is False:
        flags.append("--security-opt=no-new-privileges")
    flags += [f"--cap-drop={cap}" for cap in (security.get("capabilities") or {}).get("drop", [])]
    fields = {"metadata.name": pod_name, "metadata.namespace": namespace}
    for variable in container.get("env") or []:
        if "value" in variable:
            value = variable["value"]
        else:
            value = fields[variable["valueFrom"]["fieldRef"]["fieldPath"]]
        flags.append(f"--env={variable['name']}={value}")
    volumes = {volume["name"]: volume for volume in spec.get("volumes") or []}
    for mount in container.get("volumeMounts") or []:
        volume = volumes[mount["name"]]
        if "configMap" in volume:
            source = workdir / "configmaps" / mount["name"]
            source.mkdir(parents=True, exist_ok=True)
            for key, text in config_maps[volume["configMap"]["name"]].items():
                (source / key).write_text(text)
                (source / key).chmod(0o644)
            source.chmod(0o755)
            flags.append(f"--volume={source}:{mount['mountPath']}:ro")
        elif "emptyDir" in volume:
            flags.append(f"--tmpfs={mount['mountPath']}:rw,mode=1777")
        else:
            raise AssertionError(f"volume {mount['name']}: no stand-in for {sorted(volume)}")
    return flags, list(container.get("args") or [])


@dataclass
class Container:
    name: str

    def logs(self) -> str:
        result = podman("logs", self.name, check=False)
        return result.stdout + result.stderr

    def exit_code(self) -> int | None:
        """None while it runs."""
        state = podman("inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", self.name)
        status, code = state.stdout.split()
        return None if status in ("running", "created", "configured") else int(code)

    def stop(self, timeout: int = 30) -> int:
        """SIGTERM, as the kubelet sends on deletion; the exit code."""
        podman("stop", f"--time={timeout}", self.name, timeout=timeout + 30)
        code = self.exit_code()
        assert code is not None
        return code


@contextlib.contextmanager
def running(
    image: str,
    flags: list[str],
    args: list[str],
    *,
    env: Mapping[str, str],
    service_account: Path | None,
) -> Iterator[Container]:
    """A detached container, removed afterwards whatever happened."""
    name = f"fleetq-test-{uuid.uuid4().hex[:8]}"
    command = ["run", "--detach", f"--name={name}", *flags]
    command += [f"--env={key}={value}" for key, value in env.items()]
    if service_account is not None:
        command.append(f"--volume={service_account}:{SERVICE_ACCOUNT_DIR}:ro")
    podman(*command, image, *args)
    try:
        yield Container(name)
    finally:
        podman("rm", "--force", "--time=5", name, check=False)

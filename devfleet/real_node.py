"""A real node for a local fleet: containerd + a kubelet, joined to the fleet's manager.

`RealNode(fleet).up(archive)` starts a private containerd (devfleet.containerd_runtime),
imports the fleetq image and a pause image made from it (devfleet.pause_image), issues the
node's identity with the fleet's CA (devfleet.node_identity) and starts the kubelet
(devfleet.kubelet_process); it returns when the Node is Ready. `down()` removes the Node,
stops the kubelet and every container, unmounts what they left under the node's work
directory and deletes the pod bridge. Nothing is installed: missing packages or an unbuilt
kubelet are reported with the command that fixes them.

The fleet must have been started with `Fleet.up(manager_address=host_address())` so that
pods can reach the manager's apiserver (devfleet.node_network says why).
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tenacity import RetryError, retry, retry_if_result, stop_after_delay, wait_fixed

from devfleet.containerd_runtime import Containerd, ContainerdError, missing_packages
from devfleet.fleet import Fleet, kill_processes_under
from devfleet.kubelet_process import Kubelet, KubeletError, kubelet_binary
from devfleet.node_identity import ClusterPki, write_node_kubeconfig
from devfleet.node_network import PodNetwork, host_address
from devfleet.pause_image import pause_reference, write_pause_archive
from devfleet.ports import allocate_ports
from devfleet.toolchain import REPO_ROOT

Progress = Callable[[str], None]
NODE_READY_TIMEOUT_SECONDS = 120.0


class RealNodeError(RuntimeError):
    """A step of bringing the node up failed; the message names it and what to do."""


def image_version() -> str:
    """The fleetq version `make image` tags (pyproject.toml's, also the charts' appVersion)."""
    with (REPO_ROOT / "pyproject.toml").open("rb") as handle:
        return str(tomllib.load(handle)["project"]["version"])


def image_archive(version: str | None = None) -> Path:
    return REPO_ROOT / "dist" / f"fleetq-{version or image_version()}.oci.tar"


def preflight(archive: Path) -> list[str]:
    """What is missing before a real node can start, each with the command that fixes it."""
    problems = []
    packages = missing_packages()
    if packages:
        problems.append(f"Debian packages missing: apt-get install -y {' '.join(packages)}")
    try:
        kubelet_binary()
    except KubeletError as exc:
        problems.append(str(exc))
    if not archive.exists():
        problems.append(f"no image archive {archive}: run `make image`")
    return problems


@dataclass(frozen=True, slots=True)
class RealNodeInfo:
    """What the charts need to know about the node."""

    name: str
    address: str
    """The node's InternalIP, also where the manager's apiserver listens for its pods."""
    apiserver_port: int
    image: str
    pause_image: str


class RealNode:
    """One real node of a running fleet, its processes and its work directory."""

    def __init__(self, fleet: Fleet, name: str = "real-node-0") -> None:
        self.fleet = fleet
        self.name = name
        self.workdir = fleet.dir / "real-node"
        self.network = PodNetwork()
        self.containerd: Containerd | None = None
        self.kubelet: Kubelet | None = None

    def up(self, archive: Path, progress: Progress = print) -> RealNodeInfo:
        problems = preflight(archive)
        if problems:
            raise RealNodeError("a real node cannot start:\n  " + "\n  ".join(problems))
        if self.network.bridge_exists():
            raise RealNodeError(
                f"the pod bridge {self.network.bridge} exists: another real node runs on this "
                "machine (one at a time), or one was killed; `fleetq dev real-node --down "
                f"--name <its fleet>` or `ip link delete {self.network.bridge}` removes it"
            )
        access = self.fleet.access()
        address = host_address()
        version = image_version()
        started = time.monotonic()
        try:
            self._start_containerd(archive, version, progress)
            assert self.containerd is not None
            pki = ClusterPki.of_kwok_cluster(
                self.fleet.kwokctl.workdir, self.fleet.kwok_cluster_name("manager")
            )
            kubeconfig = write_node_kubeconfig(
                pki, self.name, access.manager.server, self.workdir / "kubelet"
            )
            self.kubelet = Kubelet(
                workdir=self.workdir / "kubelet",
                node_name=self.name,
                node_ip=address,
                kubeconfig=kubeconfig,
                client_ca=pki.ca_cert,
                runtime_endpoint=self.containerd.endpoint,
                port=allocate_ports(1)[0],
            )
            self.kubelet.start()
            progress(f"  kubelet {self.name} started (log {self.kubelet.log_path})")
            self._wait_node_ready()
        except BaseException:
            progress(f"  real node {self.name}: start failed, removing what was started")
            self.down(progress=lambda _: None)
            raise
        progress(f"  [{time.monotonic() - started:5.1f}s] node {self.name} Ready ({address})")
        port = int(access.manager.server.rsplit(":", 1)[1])
        return RealNodeInfo(
            self.name, address, port, f"localhost/fleetq:{version}", pause_reference(version)
        )

    def _start_containerd(self, archive: Path, version: str, progress: Progress) -> None:
        pause = pause_reference(version)
        pause_archive = write_pause_archive(archive, self.workdir / "pause.oci.tar", pause)
        self.containerd = Containerd(self.workdir / "containerd", self.network, pause)
        self.containerd.start()
        progress(f"  containerd started ({self.containerd.socket})")
        for source in (archive, pause_archive):
            began = time.monotonic()
            try:
                names = self.containerd.import_image(source)
            except ContainerdError as exc:
                raise RealNodeError(f"importing {source} into containerd failed: {exc}") from exc
            progress(f"  imported {', '.join(names)} in {time.monotonic() - began:.0f}s")

    def _wait_node_ready(self) -> None:
        from kubernetes import client

        kubelet = self.kubelet
        assert kubelet is not None

        @retry(
            stop=stop_after_delay(NODE_READY_TIMEOUT_SECONDS),
            wait=wait_fixed(1.0),
            retry=retry_if_result(lambda ready: not ready),
        )
        def ready() -> bool:
            code = kubelet.exit_code()
            if code is not None:
                raise RealNodeError(f"the kubelet exited ({code}); {kubelet.log_tail()}")
            with self.fleet.access().manager.api_client() as api_client:
                try:
                    node = client.CoreV1Api(api_client).read_node(self.name)
                except client.ApiException:
                    return False
            return node_ready(node)

        try:
            ready()
        except RetryError as exc:
            raise RealNodeError(
                f"node {self.name} not Ready after {NODE_READY_TIMEOUT_SECONDS:.0f}s; "
                f"{kubelet.log_tail(grep='E')}"
            ) from exc

    def down(self, progress: Progress = print) -> None:
        """Remove the Node and everything the node ran; safe to call more than once."""
        with contextlib.suppress(Exception):
            self._delete_node_object()
        if self.kubelet is not None:
            self.kubelet.stop()
            self.kubelet = None
        else:  # a kept node: its kubelet first, so it does not restart what is removed
            kill_processes_under(self.workdir / "kubelet")
        containerd = self.containerd or Containerd(
            self.workdir / "containerd", self.network, sandbox_image=""
        )
        if containerd.socket.exists():  # also a kept node's, started by another process
            try:
                removed = containerd.remove_all_tasks()
            except (ContainerdError, subprocess.TimeoutExpired) as exc:
                progress(f"  containers not removed through containerd ({exc}); killing them")
            else:
                progress(f"  removed {len(removed)} container(s) left on the node")
        containerd.stop()
        self.containerd = None
        _stop_processes_mentioning(self.workdir)
        unmounted = unmount_under(self.workdir)
        if unmounted:
            progress(f"  unmounted {unmounted} mount(s) under {self.workdir}")
        self.network.remove_bridge()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def _delete_node_object(self) -> None:
        from kubernetes import client

        with self.fleet.access().manager.api_client() as api_client:
            client.CoreV1Api(api_client).delete_node(self.name, _request_timeout=10)


def node_ready(node: Any) -> bool:
    for condition in (node.status.conditions or []) if node.status else []:
        if condition.type == "Ready":
            return bool(condition.status == "True")
    return False


def _stop_processes_mentioning(directory: Path) -> None:
    """containerd's shims outlive containerd: stop whatever still names the node's dir."""
    kill_processes_under(directory)


def unmount_under(directory: Path) -> int:
    """Unmount (lazily, deepest first) every mount below `directory`; how many."""
    prefix = str(directory.resolve()) + "/"
    targets = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mounts").read_text().splitlines():
            target = line.split()[1].replace("\\040", " ")
            if target.startswith(prefix):
                targets.append(target)
    for target in sorted(set(targets), key=len, reverse=True):
        subprocess.run(["umount", "-l", target], capture_output=True, check=False, timeout=10)
    return len(set(targets))

"""containerd (Debian's package) as a real node's container runtime, in a directory of its own.

The machine's containerd, if any, is left alone: this one has its own root, state, socket
and CNI configuration under the node's work directory, and the settings the sandbox of our
CI needs (docs/install.md §7): cgroupfs (no systemd), runc, and
`restrict_oom_score_adj = true` — the sandbox refuses the negative oom_score_adj the
kubelet gives pod sandboxes, and runc then fails every sandbox with "can't get final
child's PID from pipe: EOF". Nothing is installed here: `missing_packages` says what to
install, and the caller decides.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tenacity import retry, retry_if_result, stop_after_delay, wait_fixed

from devfleet.fleet_process import terminate_with_parent
from devfleet.node_network import PodNetwork, missing_cni_plugins
from devfleet.process_group import stop_group

K8S_NAMESPACE = "k8s.io"
"""containerd's namespace for the CRI: images the kubelet may run must be imported there."""
DEBIAN_PACKAGES = {"containerd": "containerd", "ctr": "containerd", "runc": "runc"}
"""Command -> the Debian package that provides it."""


class ContainerdError(RuntimeError):
    """containerd is missing, did not start or refused an import; the message says which."""


def missing_packages() -> list[str]:
    """The Debian packages whose commands (containerd, ctr, runc, CNI plugins) are absent."""
    missing = {pkg for command, pkg in DEBIAN_PACKAGES.items() if shutil.which(command) is None}
    if missing_cni_plugins():
        missing.add("containernetworking-plugins")
    return sorted(missing)


@dataclass
class Containerd:
    """One private containerd process: its config, its socket, the `ctr` that talks to it."""

    workdir: Path
    network: PodNetwork
    sandbox_image: str
    process: subprocess.Popen[bytes] | None = None

    @property
    def socket(self) -> Path:
        return self.workdir / "containerd.sock"

    @property
    def endpoint(self) -> str:
        """The kubelet's containerRuntimeEndpoint."""
        return f"unix://{self.socket}"

    @property
    def log_path(self) -> Path:
        return self.workdir / "containerd.log"

    def config(self) -> str:
        """containerd 1.6's config (version 2): private paths, cgroupfs, runc, our CNI."""
        cni = self.workdir / "cni"
        cri = 'plugins."io.containerd.grpc.v1.cri"'
        return f"""version = 2
root = "{self.workdir / "root"}"
state = "{self.workdir / "state"}"
disabled_plugins = ["io.containerd.internal.v1.tracing", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = "{self.socket}"

[ttrpc]
  address = "{self.workdir / "containerd.ttrpc.sock"}"

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "{self.workdir / "opt"}"

[{cri}]
  sandbox_image = "{self.sandbox_image}"
  restrict_oom_score_adj = true
  disable_apparmor = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_cdi = false

[{cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[{cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[{cri}.containerd.runtimes.runc.options]
  SystemdCgroup = false

[{cri}.cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = "{cni / "net.d"}"
  max_conf_num = 1
"""

    def start(self, timeout: float = 60.0) -> None:
        """Write the config and the CNI network, start containerd, wait for its socket."""
        missing = missing_packages()
        if missing:
            raise ContainerdError(
                "a real node needs containerd, runc and the CNI plugins: "
                f"apt-get install -y {' '.join(missing)}"
            )
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.network.write(self.workdir / "cni" / "net.d", self.workdir / "cni" / "ipam")
        config = self.workdir / "config.toml"
        config.write_text(self.config())
        with self.log_path.open("a") as log:
            self.process = subprocess.Popen(
                ["containerd", "--config", str(config)],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=terminate_with_parent,
            )
        if not self._wait_answering(timeout):
            raise ContainerdError(
                f"containerd did not answer on {self.socket} within {timeout:.0f}s; "
                f"{self.log_tail()}"
            )

    def _wait_answering(self, timeout: float) -> bool:
        @retry(
            stop=stop_after_delay(timeout),
            wait=wait_fixed(0.5),
            retry=retry_if_result(lambda ok: not ok),
            retry_error_callback=lambda _: False,
        )
        def answering() -> bool:
            if self.process is not None and self.process.poll() is not None:
                raise ContainerdError(
                    f"containerd exited ({self.process.returncode}); {self.log_tail()}"
                )
            return self.socket.exists() and self.ctr_ok("version")

        return bool(answering())

    def ctr(self, *args: str, timeout: float = 300.0) -> str:
        """`ctr` against this containerd in the CRI's namespace; raises with its output."""
        command = ["ctr", "--address", str(self.socket), "--namespace", K8S_NAMESPACE, *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
        if done.returncode != 0:
            raise ContainerdError(
                f"{' '.join(command)} failed (exit {done.returncode}): "
                f"{(done.stdout + done.stderr).strip()[-2000:]}"
            )
        return done.stdout

    def ctr_ok(self, *args: str) -> bool:
        try:
            self.ctr(*args, timeout=10)
        except (ContainerdError, subprocess.TimeoutExpired):
            return False
        return True

    def import_image(self, archive: Path) -> list[str]:
        """Import an OCI archive into the CRI's namespace; the image names it brought."""
        before = set(self.images())
        self.ctr("images", "import", str(archive))
        return sorted(set(self.images()) - before) or self.images()

    def images(self) -> list[str]:
        return [line.split()[0] for line in self.ctr("images", "list").splitlines()[1:] if line]

    def remove_all_tasks(self) -> list[str]:
        """Kill and delete every container left in the CRI's namespace (a kubelet stopped
        before its pods were); their ids."""
        ids = [line.split()[0] for line in self.ctr("containers", "list").splitlines()[1:] if line]
        for container in ids:
            self.ctr_ok("tasks", "kill", "--signal", "SIGKILL", container)
            self.ctr_ok("tasks", "delete", "--force", container)
            self.ctr_ok("containers", "delete", container)
        return ids

    def stop(self, grace: float = 10.0) -> None:
        if self.process is not None:
            stop_group(self.process, grace)
            self.process = None

    def log_tail(self, lines: int = 30) -> str:
        if not self.log_path.exists():
            return "(no containerd log)"
        tail = self.log_path.read_text(errors="replace").splitlines()[-lines:]
        return "containerd log:\n" + "\n".join(tail)

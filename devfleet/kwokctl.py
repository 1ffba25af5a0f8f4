"""Thin wrapper over kwokctl's binary runtime: one real control plane per call, no containers.

kwokctl runs etcd, kube-apiserver, kube-controller-manager, kube-scheduler and the kwok
controller as local processes with their own PKI and random loopback ports. We always pass
our own binaries (built by `devfleet.toolchain`) so it never tries to download anything,
and a private work directory so several fleets (a developer's and a test run's) coexist.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from devfleet.toolchain import KUBERNETES_VERSION, binary_path, missing_binaries

FULL_ONLY_COMPONENTS = ("kube-controller-manager", "kube-scheduler", "kwok-controller")
PORT_OPTIONS = (
    "kubeApiserverPort",
    "etcdPort",
    "etcdPeerPort",
    "kwokControllerPort",
    "kubeControllerManagerPort",
    "kubeSchedulerPort",
)
"""Every port kwokctl's binary runtime would otherwise choose itself (see devfleet.ports)."""

FAKE_NODE_ANNOTATION = "kwok.x-k8s.io/node=fake"
"""What marks a node as kwok's (devfleet.fleet_spec.node_manifests sets it on every one)."""
KWOK_NODE_PATCH = f"""componentsPatches:
  - name: kwok-controller
    extraArgs:
      - {{key: manage-all-nodes, value: "false", override: true}}
      - {{key: manage-nodes-with-annotation-selector, value: "{FAKE_NODE_ANNOTATION}"}}"""
"""kwokctl's binary runtime starts kwok with --manage-all-nodes=true, so kwok would also
heartbeat a real node (devfleet.real_node) and play its pods: kwok takes only the nodes
carrying its annotation. A patch in the config file, not `--extra-args`, because kwokctl
0.8 files a second component's flag pairs under the wrong patch index."""


class KwokctlError(RuntimeError):
    """kwokctl failed; the message holds the command and what it printed."""


@dataclass(frozen=True)
class Kwokctl:
    """kwokctl bound to one work directory (where it keeps PKI, logs, pids and configs)."""

    workdir: Path

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            {
                "KWOK_WORKDIR": str(self.workdir),
                "KWOK_RUNTIME": "binary",
                "KWOK_KUBE_VERSION": KUBERNETES_VERSION,
                "KWOK_KUBE_APISERVER_BINARY": str(binary_path("kube-apiserver")),
                "KWOK_KUBE_CONTROLLER_MANAGER_BINARY": str(binary_path("kube-controller-manager")),
                "KWOK_KUBE_SCHEDULER_BINARY": str(binary_path("kube-scheduler")),
                "KWOK_KUBECTL_BINARY": str(binary_path("kubectl")),
                "KWOK_CONTROLLER_BINARY": str(binary_path("kwok")),
                "KWOK_ETCD_BINARY": str(binary_path("etcd")),
            }
        )
        return env

    def command(self, *args: str) -> list[str]:
        return [str(binary_path("kwokctl")), *args]

    def run(self, *args: str, timeout: float = 300) -> str:
        cmd = self.command(*args)
        try:
            done = subprocess.run(
                cmd, env=self.env(), capture_output=True, text=True, timeout=timeout, check=False
            )
        except subprocess.TimeoutExpired as exc:
            raise KwokctlError(f"timed out after {timeout:.0f}s: {' '.join(cmd)}") from exc
        if done.returncode != 0:
            output = (done.stdout + done.stderr).strip()[-3000:]
            raise KwokctlError(
                f"kwokctl failed (exit {done.returncode}): {' '.join(cmd)}\n{output}"
            )
        return done.stdout

    def write_config(
        self,
        name: str,
        ports: Sequence[int],
        stages: Sequence[str],
        cert_sans: Sequence[str] = (),
    ) -> Path:
        """A kwokctl --config file: explicit ports for every component, kwok's node
        selection (KWOK_NODE_PATCH), extra SANs of the apiserver's certificate, kwok stages."""
        options = "\n".join(
            f"  {key}: {port}" for key, port in zip(PORT_OPTIONS, ports, strict=True)
        )
        if cert_sans:
            options += "\n  kubeApiserverCertSANs: [" + ", ".join(cert_sans) + "]"
        header = (
            "apiVersion: config.kwok.x-k8s.io/v1alpha1\n"
            "kind: KwokctlConfiguration\n"
            f"options:\n{options}\n{KWOK_NODE_PATCH}"
        )
        path = self.workdir / f"config-{name}.yaml"
        path.write_text("\n---\n".join([header, *stages]) + "\n")
        return path

    @staticmethod
    def loopback_args(ports: Sequence[int]) -> list[str]:
        """Keep every listener on 127.0.0.1 (kwokctl binds etcd and the apiserver to all)."""
        by_option = dict(zip(PORT_OPTIONS, ports, strict=True))
        pairs = [
            "kube-apiserver=bind-address=127.0.0.1",
            f"etcd=listen-client-urls=http://127.0.0.1:{by_option['etcdPort']}",
            f"etcd=listen-peer-urls=http://127.0.0.1:{by_option['etcdPeerPort']}",
        ]
        return [arg for pair in pairs for arg in ("--extra-args", pair)]

    def create_args(self, name: str, *, lite: bool, config: Path | None) -> list[str]:
        """Arguments of `kwokctl create cluster` for a full or lite (etcd + apiserver) cluster."""
        args = [
            "create",
            "cluster",
            "--name",
            name,
            "--runtime",
            "binary",
            "--kubeconfig",
            "",
            "--kube-authorization",
            "--kube-admission",
            "--quiet-pull",
            "--wait",
            "0s",
            "--timeout",
            "240s",
        ]
        if lite:
            args += ["--disable", ",".join(FULL_ONLY_COMPONENTS)]
        if config is not None:
            args += ["--config", str(config)]
        return args

    def start_create(
        self,
        name: str,
        *,
        lite: bool,
        ports: Sequence[int],
        stages: Sequence[str],
        extra_args: Sequence[str] = (),
        cert_sans: Sequence[str] = (),
    ) -> subprocess.Popen[str]:
        """Start `kwokctl create cluster` in the background (clusters start in parallel);
        `extra_args` are more `--extra-args component=flag=value` pairs."""
        config = self.write_config(name, ports, stages, cert_sans)
        args = self.create_args(name, lite=lite, config=config) + self.loopback_args(ports)
        args += list(extra_args)
        log = (self.workdir / f"create-{name}.log").open("w")
        return subprocess.Popen(
            self.command(*args),
            env=self.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def creation_log(self, name: str) -> str:
        path = self.workdir / f"create-{name}.log"
        return path.read_text()[-3000:] if path.exists() else ""

    def kubeconfig(self, name: str) -> str:
        return self.run("get", "kubeconfig", "--name", name, timeout=60)

    def delete(self, name: str) -> None:
        self.run("delete", "cluster", "--name", name, timeout=120)

    def clusters(self) -> list[str]:
        if not self.workdir.exists():
            return []
        return [
            line.strip()
            for line in self.run("get", "clusters", timeout=30).splitlines()
            if line.strip()
        ]


def check_binaries(needed: Sequence[str] = ("kubernetes", "etcd", "kwok")) -> None:
    """Fail with a clear instruction when the fleet's tools are not built yet."""
    missing = missing_binaries(needed)
    if missing:
        raise KwokctlError(
            "the local fleet's tools are not built: "
            + ", ".join(missing)
            + "\nrun `make tools` (or `fleetq dev tools`) first; a cold build takes ~25 min"
        )

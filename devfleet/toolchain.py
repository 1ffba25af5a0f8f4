"""Builds the Kubernetes tools the local fleet runs, from Go modules, into a versioned cache.

Nothing here downloads a prebuilt binary: every tool is compiled with the ordinary `go`
command from a small wrapper module kept in the repo under `tools/go/<tool>/` (its go.mod
and go.sum pin exact versions). Builds are idempotent: a tool whose binaries exist and
whose stamp matches the wrapper module's content is skipped. Every binary is checked by
running it and looking for the expected version in its output, so a half-built or
unstamped binary fails loudly here instead of confusingly later in kwokctl.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
GO_MODULES_DIR = REPO_ROOT / "tools" / "go"

KUBERNETES_VERSION = "v1.36.3"
ETCD_VERSION = "v3.6.16"
KWOK_VERSION = "v0.8.0"
HELM_VERSION = "v4.3.1"
KUEUE_VERSION = "v0.19.2"
"""Upstream Kueue, the yardstick: interop partner, benchmark opponent, conformance suites."""
KUEUE_PREVIOUS_VERSION = "v0.17.0"
"""The second upstream version fleetq is tested against (interop), built as `kueue-v0.17`."""
KUEUE_VERSIONS = (KUEUE_VERSION, KUEUE_PREVIOUS_VERSION)
JOBSET_VERSION = "v0.10.1"
KUBERAY_VERSION = "v1.5.0"
TRAINER_VERSION = "v2.0.0"
TRAINING_OPERATOR_VERSION = "v1.9.3"
"""Kubeflow training operator (v1 jobs). v1.9.3, not v1.8.1: v1.8.1 has no
`runPolicy.managedBy` (its CRDs prune it, so no Kubeflow v1 job could be dispatched by
MultiKueue, which upstream Kueue requires it for since 0.11) and no JAXJob; v1.9.3 is the
version upstream Kueue v0.19.2 builds and tests against (docs/kubeflow.md)."""
MPI_OPERATOR_VERSION = "v0.6.0"
LWS_VERSION = "v0.7.0"
CONFORMANCE_KUEUE_VERSION = "v0.19.2"
GINKGO_VERSION = "v2.32.0"
"""The ginkgo library the conformance suites link (tools/go/conformance/go.mod): its CLI
runs them (tools/go/ginkgo)."""


def tools_cache_dir() -> Path:
    """Where built tools live: outside the repo, shared by every clone on the machine."""
    override = os.environ.get("FLEETQ_TOOLS_DIR")
    if override:
        return Path(override)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fleetq" / "tools"


@dataclass(frozen=True)
class VersionCheck:
    """How to ask a binary for its version and what the answer must contain."""

    args: tuple[str, ...]
    expect: str
    build_info: bool = False
    """Read the module version Go embedded in the binary (for commands without --version)."""


@dataclass(frozen=True)
class ModulePatch:
    """A patch applied to a copy of one Go module before a build (benchmarks only).

    The copy lives in the tools cache (`patched/<module>@<version>`), never in the repo or
    the read-only module cache; the build runs with a generated `-modfile`: the wrapper's
    go.mod plus a `replace` of the module with that copy."""

    module: str
    version: str
    patch_file: str
    """Its name in the wrapper module (a `diff -u` with a/ and b/ prefixes)."""

    def source(self) -> Path:
        return Path.home() / "go" / "pkg" / "mod" / f"{self.module}@{self.version}"

    def copy_dir(self) -> Path:
        return tools_cache_dir() / "patched" / f"{self.module.rsplit('/', 1)[-1]}@{self.version}"


@dataclass(frozen=True)
class GoTool:
    """One wrapper module under tools/go and the binaries it builds."""

    name: str
    version: str
    packages: tuple[str, ...]
    binaries: tuple[str, ...]
    checks: dict[str, VersionCheck]
    ldflags: tuple[str, ...] = ()
    test_binaries: tuple[tuple[str, str], ...] = ()
    """(binary, package) pairs compiled with `go test -c`: test-only packages (e2e suites)."""
    on_request: bool = False
    """Built only when named (`fleetq dev tools NAME`), never by a build of every tool."""
    family: str = ""
    """Tools that build the same binaries at different versions (upstream Kueue) share a
    family: the cache directory is `<family>-<version>`, so each version keeps its own."""
    module_patch: ModulePatch | None = None

    @property
    def module_dir(self) -> Path:
        return GO_MODULES_DIR / self.name

    @property
    def install_dir(self) -> Path:
        return tools_cache_dir() / f"{self.family or self.name}-{self.version}"

    def binary(self, name: str) -> Path:
        return self.install_dir / name

    def stamp(self) -> str:
        """A digest of the wrapper module and flags: a change rebuilds the tool."""
        digest = hashlib.sha256()
        # main.go: a wrapper module's own command (only some have one).
        for name in ("go.mod", "go.sum", "main.go"):
            path = self.module_dir / name
            if path.exists():
                digest.update(path.read_bytes())
        digest.update(" ".join(self.ldflags).encode())
        digest.update(" ".join(self.packages).encode())
        digest.update(" ".join(f"{b}={p}" for b, p in self.test_binaries).encode())
        if self.module_patch is not None:
            digest.update((self.module_dir / self.module_patch.patch_file).read_bytes())
        return digest.hexdigest()[:16]


def _kubernetes_ldflags(version: str) -> tuple[str, ...]:
    major, minor = version.lstrip("v").split(".")[:2]
    component = "k8s.io/component-base/version"
    return (
        f"-X {component}.gitVersion={version}",
        f"-X {component}.gitMajor={major}",
        f"-X {component}.gitMinor={minor}",
        f"-X {component}.gitTreeState=clean",
        f"-X {component}.gitCommit=unknown",
        f"-X {component}.buildDate=2026-01-01T00:00:00Z",
        f"-X k8s.io/client-go/pkg/version.gitVersion={version}",
    )


def _k8s_check() -> VersionCheck:
    return VersionCheck(("--version",), f"Kubernetes {KUBERNETES_VERSION}")


def _kueue_tool(name: str, version: str) -> GoTool:
    """Upstream Kueue's manager, its measurement build (minimalkueue) and its scheduler-perf
    runner at one version; none has a --version flag, so the embedded module version tells."""
    check = VersionCheck((), f"sigs.k8s.io/kueue\t{version}", build_info=True)
    return GoTool(
        name=name,
        version=version,
        packages=(
            "sigs.k8s.io/kueue/cmd/kueue",
            "sigs.k8s.io/kueue/test/performance/scheduler/minimalkueue",
            "sigs.k8s.io/kueue/test/performance/scheduler/runner",
        ),
        binaries=("kueue", "minimalkueue", "runner"),
        checks={binary: check for binary in ("kueue", "minimalkueue", "runner")},
        ldflags=(f"-X sigs.k8s.io/kueue/pkg/version.GitVersion={version}",),
        family="kueue",
    )


TOOLS: tuple[GoTool, ...] = (
    GoTool(
        name="kubernetes",
        version=KUBERNETES_VERSION,
        packages=(
            "k8s.io/kubernetes/cmd/kube-apiserver",
            "k8s.io/kubernetes/cmd/kube-controller-manager",
            "k8s.io/kubernetes/cmd/kube-scheduler",
            "k8s.io/kubernetes/cmd/kubectl",
        ),
        binaries=("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"),
        checks={
            "kube-apiserver": _k8s_check(),
            "kube-controller-manager": _k8s_check(),
            "kube-scheduler": _k8s_check(),
            "kubectl": VersionCheck(("version", "--client"), KUBERNETES_VERSION),
        },
        ldflags=_kubernetes_ldflags(KUBERNETES_VERSION),
    ),
    GoTool(
        # A real node's kubelet (devfleet/real_node.py, docs/install.md §7), from the same
        # Kubernetes module in its own wrapper (tools/go/kubelet), so adding it does not
        # change the stamp of the fleet's tools. ~10 min cold: built only when named.
        name="kubelet",
        version=KUBERNETES_VERSION,
        packages=("k8s.io/kubernetes/cmd/kubelet",),
        binaries=("kubelet",),
        checks={"kubelet": _k8s_check()},
        ldflags=_kubernetes_ldflags(KUBERNETES_VERSION),
        on_request=True,
    ),
    GoTool(
        name="etcd",
        version=ETCD_VERSION,
        packages=("go.etcd.io/etcd/server/v3",),
        binaries=("etcd",),
        checks={"etcd": VersionCheck(("--version",), ETCD_VERSION.lstrip("v"))},
    ),
    GoTool(
        name="kwok",
        version=KWOK_VERSION,
        packages=("sigs.k8s.io/kwok/cmd/kwok", "sigs.k8s.io/kwok/cmd/kwokctl"),
        binaries=("kwok", "kwokctl"),
        checks={
            "kwok": VersionCheck(("--version",), KWOK_VERSION.lstrip("v")),
            "kwokctl": VersionCheck(("--version",), KWOK_VERSION.lstrip("v")),
        },
    ),
    GoTool(
        name="helm",
        version=HELM_VERSION,
        packages=("helm.sh/helm/v4/cmd/helm",),
        binaries=("helm",),
        checks={"helm": VersionCheck(("version", "--short"), HELM_VERSION)},
        ldflags=(f"-X helm.sh/helm/v4/internal/version.version={HELM_VERSION}",),
    ),
    _kueue_tool("kueue", KUEUE_VERSION),
    _kueue_tool("kueue-v0.17", KUEUE_PREVIOUS_VERSION),
    GoTool(
        # v0.19.2's manager whose MultiKueue worker clients take their QPS/burst from
        # KUEUE_BENCH_WORKER_QPS/_BURST (unpatched: client-go's 5/10 whatever the
        # Configuration says), so bench/multikueue can give upstream fleetq's worker budget.
        name="kueue-worker-budget",
        version=KUEUE_VERSION,
        packages=("sigs.k8s.io/kueue/cmd/kueue",),
        binaries=("kueue",),
        checks={"kueue": VersionCheck((), f"sigs.k8s.io/kueue\t{KUEUE_VERSION}", build_info=True)},
        ldflags=(f"-X sigs.k8s.io/kueue/pkg/version.GitVersion={KUEUE_VERSION}",),
        module_patch=ModulePatch("sigs.k8s.io/kueue", KUEUE_VERSION, "worker-client-budget.patch"),
        on_request=True,
    ),
    GoTool(
        name="jobset",
        version=JOBSET_VERSION,
        # The controller's main package is the module root (devfleet/operators/jobset.py).
        packages=("sigs.k8s.io/jobset",),
        binaries=("jobset-controller",),
        checks={
            # No --version flag either: the embedded module version tells.
            "jobset-controller": VersionCheck(
                (), f"sigs.k8s.io/jobset\t{JOBSET_VERSION}", build_info=True
            ),
        },
        ldflags=(f"-X sigs.k8s.io/jobset/pkg/version.GitVersion={JOBSET_VERSION}",),
    ),
    GoTool(
        name="kuberay",
        version=KUBERAY_VERSION,
        # The operator's main package is the module root (devfleet/kuberay_operator.py).
        packages=("github.com/ray-project/kuberay/ray-operator",),
        binaries=("kuberay-operator",),
        checks={
            # No --version flag: the embedded module version tells.
            "kuberay-operator": VersionCheck(
                (),
                f"github.com/ray-project/kuberay/ray-operator\t{KUBERAY_VERSION}",
                build_info=True,
            ),
        },
    ),
    GoTool(
        name="training-operator",
        version=TRAINING_OPERATOR_VERSION,
        # The module's own command minus its in-cluster certificate rotator (see
        # tools/go/training-operator/main.go and devfleet/training_operator.py).
        packages=("fleetq.dev/tools/training-operator",),
        binaries=("training-operator",),
        checks={
            "training-operator": VersionCheck(
                (),
                f"github.com/kubeflow/training-operator\t{TRAINING_OPERATOR_VERSION}",
                build_info=True,
            ),
        },
    ),
    GoTool(
        # Kubeflow Trainer's controller-manager (TrainJob, TrainingRuntime,
        # ClusterTrainingRuntime); it creates JobSets, so JobSet's controller runs beside it.
        name="trainer",
        version=TRAINER_VERSION,
        packages=("github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager",),
        binaries=("trainer-controller-manager",),
        checks={
            "trainer-controller-manager": VersionCheck(
                (), f"github.com/kubeflow/trainer/v2\t{TRAINER_VERSION}", build_info=True
            ),
        },
    ),
    GoTool(
        name="mpi-operator",
        version=MPI_OPERATOR_VERSION,
        # The module's controller under a command that fits several operators on one
        # machine (tools/go/mpi-operator/main.go, devfleet/mpi_operator.py).
        packages=("fleetq.dev/tools/mpi-operator",),
        binaries=("mpi-operator",),
        checks={
            "mpi-operator": VersionCheck(
                (), f"github.com/kubeflow/mpi-operator\t{MPI_OPERATOR_VERSION}", build_info=True
            ),
        },
    ),
    GoTool(
        name="lws",
        version=LWS_VERSION,
        # LeaderWorkerSet's controller (sigs.k8s.io/lws/cmd), for the
        # leaderworkerset.x-k8s.io/leaderworkerset kind (every full fleet runs it).
        packages=("sigs.k8s.io/lws/cmd",),
        binaries=("lws-controller",),
        checks={
            "lws-controller": VersionCheck((), f"sigs.k8s.io/lws\t{LWS_VERSION}", build_info=True),
        },
        ldflags=(f"-X sigs.k8s.io/lws/pkg/version.GitVersion={LWS_VERSION}",),
    ),
    GoTool(
        # Upstream Kueue's own e2e suites and kubectl-kueue, run against fleetq as its
        # conformance test (devfleet/conformance.py, docs/conformance.md). Heavy: not in a
        # plain `make tools`; the Makefile's FLEET_TOOLS names it (`make test` runs a slice).
        name="conformance",
        version=CONFORMANCE_KUEUE_VERSION,
        packages=("sigs.k8s.io/kueue/cmd/kueuectl",),
        binaries=(
            "kubectl-kueue",
            "singlecluster-baseline.test",
            "singlecluster-extended.test",
            "multikueue-baseline.test",
        ),
        test_binaries=(
            ("singlecluster-baseline.test", "sigs.k8s.io/kueue/test/e2e/singlecluster/baseline"),
            ("singlecluster-extended.test", "sigs.k8s.io/kueue/test/e2e/singlecluster/extended"),
            ("multikueue-baseline.test", "sigs.k8s.io/kueue/test/e2e/multikueue/baseline"),
        ),
        checks={
            binary: VersionCheck(
                (), f"sigs.k8s.io/kueue\t{CONFORMANCE_KUEUE_VERSION}", build_info=True
            )
            for binary in (
                "kubectl-kueue",
                "singlecluster-baseline.test",
                "singlecluster-extended.test",
                "multikueue-baseline.test",
            )
        },
        ldflags=(f"-X sigs.k8s.io/kueue/pkg/version.GitVersion={CONFORMANCE_KUEUE_VERSION}",),
        on_request=True,
    ),
    GoTool(
        # The ginkgo CLI: runs the conformance suites' precompiled binaries in parallel
        # processes, as upstream's e2e targets do (--procs). Its own wrapper module and
        # cache directory, so the conformance binaries do not rebuild for it.
        name="ginkgo",
        version=GINKGO_VERSION,
        packages=("github.com/onsi/ginkgo/v2/ginkgo",),
        binaries=("ginkgo",),
        checks={"ginkgo": VersionCheck(("version",), f"Ginkgo Version {GINKGO_VERSION[1:]}")},
        on_request=True,
    ),
)


class ToolBuildError(RuntimeError):
    """A build or check failed; the message carries the failing command and its output."""


@dataclass
class BuildReport:
    """What `build_tools` did, per tool: skipped (already built) or built in N seconds."""

    built: dict[str, float] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)


Progress = Callable[[str], None]


def tool(name: str) -> GoTool:
    for candidate in TOOLS:
        if candidate.name == name:
            return candidate
    raise KeyError(f"unknown tool {name!r}; known: {', '.join(t.name for t in TOOLS)}")


def kueue_tool(version: str = KUEUE_VERSION) -> GoTool:
    """The tool that builds upstream Kueue at `version` (one of KUEUE_VERSIONS)."""
    for candidate in TOOLS:
        if candidate.family == "kueue" and candidate.version == version:
            return candidate
    raise KeyError(
        f"upstream Kueue {version} is not built here; known: {', '.join(KUEUE_VERSIONS)}"
    )


def binary_path(binary: str) -> Path:
    """The cached path of one binary (e.g. "kube-apiserver"), whether or not it is built."""
    for candidate in TOOLS:
        if binary in candidate.binaries:
            return candidate.binary(binary)
    raise KeyError(f"no tool builds a binary named {binary!r}")


def missing_binaries(names: Sequence[str] | None = None) -> list[str]:
    """Binaries (of the named tools, or all) that are not built yet."""
    wanted = [t for t in TOOLS if names is None or t.name in names]
    return [str(t.binary(b)) for t in wanted for b in t.binaries if not t.binary(b).exists()]


def is_current(go_tool: GoTool) -> bool:
    stamp_file = go_tool.install_dir / ".stamp"
    if not stamp_file.exists() or stamp_file.read_text().strip() != go_tool.stamp():
        return False
    return all(go_tool.binary(b).exists() for b in go_tool.binaries)


def _go_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("GOTOOLCHAIN", "local")
    env["CGO_ENABLED"] = "0"
    return env


def _run(cmd: Sequence[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    try:
        done = subprocess.run(
            list(cmd), cwd=cwd, env=env, capture_output=True, text=True, check=False
        )
    except FileNotFoundError as exc:
        raise ToolBuildError(f"cannot run {cmd[0]!r}: {exc}. Is Go installed and on PATH?") from exc
    if done.returncode != 0:
        output = (done.stdout + done.stderr).strip()[-4000:]
        raise ToolBuildError(
            f"command failed (exit {done.returncode}) in {cwd}:\n  {' '.join(cmd)}\n{output}"
        )
    return done.stdout + done.stderr


def check_version(go_tool: GoTool, binary: str) -> str:
    """Run the binary's version command; raise unless the expected version shows."""
    check = go_tool.checks[binary]
    path = go_tool.binary(binary)
    command = ["go", "version", "-m", str(path)] if check.build_info else [str(path), *check.args]
    output = _run(command, cwd=go_tool.install_dir)
    if check.expect not in output:
        raise ToolBuildError(f"{' '.join(command)} printed no {check.expect!r}:\n{output[-1000:]}")
    first_line = next((line for line in output.splitlines() if check.expect in line), "")
    return first_line.strip()


def prepare_patched_copy(go_tool: GoTool, staging: Path, progress: Progress) -> list[str]:
    """Copy the module to patch (writable), apply the patch, and write a go.mod in
    `staging` that replaces the module with the copy; the `go build` flags that use it."""
    patch = go_tool.module_patch
    if patch is None:
        return []
    source = patch.source()
    if not (source / "go.mod").exists():
        raise ToolBuildError(
            f"{source} is missing: run `go mod download {patch.module}@{patch.version}`"
        )
    copy = patch.copy_dir()
    if copy.exists():
        _make_writable(copy)
        shutil.rmtree(copy)
    progress(f"{go_tool.name}: patching a copy of {patch.module}@{patch.version}")
    shutil.copytree(source, copy, copy_function=shutil.copyfile)
    _make_writable(copy)  # the module cache's folders are read-only; copytree keeps that
    patch_file = go_tool.module_dir / patch.patch_file
    _run(["patch", "-p1", "--forward", "-i", str(patch_file)], cwd=copy)
    modfile = staging / "build.mod"
    wrapper = (go_tool.module_dir / "go.mod").read_text()
    modfile.write_text(f"{wrapper}\nreplace {patch.module} {patch.version} => {copy}\n")
    shutil.copyfile(go_tool.module_dir / "go.sum", staging / "build.sum")
    return [f"-modfile={modfile}"]


def _make_writable(root: Path) -> None:
    for directory, _, files in os.walk(root):
        os.chmod(directory, 0o755)
        for name in files:
            os.chmod(os.path.join(directory, name), 0o644)


def build_tool(go_tool: GoTool, progress: Progress) -> float:
    """Compile one wrapper module's binaries into a temp dir, check them, then move in place."""
    if shutil.which("go") is None:
        raise ToolBuildError("the `go` command is not on PATH; install Go >= 1.26 first")
    started = time.monotonic()
    staging = go_tool.install_dir.with_name(go_tool.install_dir.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    modfile_flags = prepare_patched_copy(go_tool, staging, progress)
    ldflags = " ".join(("-s", "-w", *go_tool.ldflags))
    # One package: name the output (Go would call etcd's "server"); several: a directory.
    output = staging / go_tool.binaries[0] if len(go_tool.packages) == 1 else f"{staging}/"
    cmd = ["go", "build", "-trimpath", *modfile_flags, "-ldflags", ldflags, "-o", str(output)]
    cmd += list(go_tool.packages)
    built = [b for b in go_tool.binaries if b not in dict(go_tool.test_binaries)]
    progress(f"{go_tool.name} {go_tool.version}: go build {' '.join(built)}")
    _run(cmd, cwd=go_tool.module_dir, env=_go_env())
    for binary, package in go_tool.test_binaries:
        # One at a time: a test binary links all of its package's dependencies.
        progress(f"{go_tool.name} {go_tool.version}: go test -c {package}")
        test_cmd = ["go", "test", "-c", "-vet=off", "-trimpath", "-ldflags", ldflags]
        _run([*test_cmd, "-o", str(staging / binary), package], go_tool.module_dir, _go_env())
    for generated in ("build.mod", "build.sum"):  # a patched build's modfile
        (staging / generated).unlink(missing_ok=True)
    shutil.rmtree(go_tool.install_dir, ignore_errors=True)
    staging.rename(go_tool.install_dir)
    for binary in go_tool.binaries:
        progress(f"{go_tool.name}: {binary}: {check_version(go_tool, binary)}")
    (go_tool.install_dir / ".stamp").write_text(go_tool.stamp() + "\n")
    return time.monotonic() - started


@contextmanager
def _tool_lock(go_tool: GoTool) -> Iterator[None]:
    """Held while one tool builds: another checkout on this machine (a second `make test`,
    an engineer's `fleetq dev tools`) shares the cache and would build into the same
    staging directory; it waits here and then finds the tool current."""
    path = go_tool.install_dir.with_name(go_tool.install_dir.name + ".lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _prefixed(progress: Progress, prefix: str) -> Progress:
    return lambda line: progress(f"{prefix} {line}")


def build_jobs() -> int:
    """How many tools build at once: two by default. Each `go build` already compiles on
    every core, but linking and module downloads are serial, so a second build fills the
    gaps (FLEETQ_TOOL_JOBS overrides; 1 builds one after another)."""
    try:
        return max(1, int(os.environ.get("FLEETQ_TOOL_JOBS", "2")))
    except ValueError:
        return 2


def build_tools(names: Sequence[str] | None = None, progress: Progress = print) -> BuildReport:
    """Build every tool (or the named ones) that is not already current, `build_jobs()`
    at a time; the first failure is raised once the builds under way have finished."""
    report = BuildReport()
    selected = [t for t in TOOLS if (names is None and not t.on_request) or t.name in (names or ())]
    unknown = set(names or ()) - {t.name for t in TOOLS}
    if unknown:
        raise ToolBuildError(f"unknown tools: {', '.join(sorted(unknown))}")
    pending: list[tuple[str, GoTool]] = []
    for index, go_tool in enumerate(selected, start=1):
        prefix = f"[{index}/{len(selected)}]"
        if is_current(go_tool):
            progress(f"{prefix} {go_tool.name} {go_tool.version}: already built, skipping")
            report.skipped.append(go_tool.name)
        else:
            pending.append((prefix, go_tool))
    lock = threading.Lock()

    def say(line: str) -> None:
        with lock:
            progress(line)

    def build(prefix: str, go_tool: GoTool) -> float:
        with _tool_lock(go_tool):
            if is_current(go_tool):
                say(f"{prefix} {go_tool.name} {go_tool.version}: built meanwhile by another run")
                return 0.0
            say(f"{prefix} {go_tool.name} {go_tool.version}: building (cold: minutes)")
            seconds = build_tool(go_tool, _prefixed(say, prefix))
        say(f"{prefix} {go_tool.name}: done in {seconds:.0f}s -> {go_tool.install_dir}")
        return seconds

    with ThreadPoolExecutor(max_workers=build_jobs()) as pool:
        futures = {go_tool.name: pool.submit(build, prefix, go_tool) for prefix, go_tool in pending}
    failures = []
    for name, future in futures.items():
        error = future.exception()
        if error is None:
            report.built[name] = future.result()
        else:
            failures.append(error)
    if failures:
        raise failures[0]
    return report

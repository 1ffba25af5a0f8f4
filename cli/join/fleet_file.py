"""The fleet file (`clusters.yaml`): which clusters form a fleet and how they are joined.

Read once, checked completely, then trusted by the rest of `fleetq join`. Every problem is
reported with its place in the file (`workers[1].context`), and unknown keys are errors, not
silently ignored: a misspelt `tokenLifetme` must not leave a worker with a default token.
`clusters.example.yaml` at the top of the repository documents every field.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from cli.join.duration_text import DurationError, parse_duration
from core.api.markers import DNS1123_LABEL, DNS1123_SUBDOMAIN
from core.api.multikueue import MAX_CLUSTERS_PER_CONFIG
from core.api.multikueue_cluster_set import MAX_CLUSTERS_PER_SET

FILE_API_VERSION = "fleetq.dev/v1alpha1"
FILE_KIND = "Fleet"
DEFAULT_HUB_NAMESPACE = "kueue-system"
DEFAULT_IDENTITY_NAMESPACE = "fleetq-system"
DEFAULT_SERVICE_ACCOUNT = "fleetq-multikueue"
DEFAULT_TOKEN_LIFETIME_SECONDS = 30 * 86_400
DEFAULT_ROTATE_BEFORE_SECONDS = 7 * 86_400
DEFAULT_DISPATCHER = "fleetq.dev/capacity-aware"
DEFAULT_CONFIG_NAME = "fleet"
RESERVED_WORKER_NAME = "manager"
"""Output and --context-override name the manager so; no worker may be called that."""
MIN_TOKEN_LIFETIME_SECONDS = 600
"""The TokenRequest API refuses shorter lifetimes."""

_SUBDOMAIN = re.compile(DNS1123_SUBDOMAIN)
_LABEL = re.compile(DNS1123_LABEL)
_DISPATCHER_NAME = re.compile(r"^[a-z0-9.-]+/[A-Za-z0-9._-]+$")


class FleetFileError(ValueError):
    """The fleet file cannot be used; the message names the file, the place and the fix."""


@dataclass(frozen=True, slots=True)
class ClusterRef:
    """How the CLI reaches a cluster: a kubeconfig context, from a file or the default ones."""

    context: str | None = None
    """None: the kubeconfig's current-context."""
    kubeconfig: Path | None = None
    """None: $KUBECONFIG, else ~/.kube/config (as kubectl)."""


@dataclass(frozen=True, slots=True)
class ManagerSpec:
    cluster: ClusterRef
    namespace: str = DEFAULT_HUB_NAMESPACE
    """The hub's namespace: worker kubeconfig Secrets must live here."""


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    name: str
    """The MultiKueueCluster's name on the manager."""
    cluster: ClusterRef
    secret_name: str
    """The Secret (in the hub namespace) holding the minted kubeconfig."""
    server: str | None = None
    """The worker's API address as the hub reaches it; None: the one in the CLI's kubeconfig."""


@dataclass(frozen=True, slots=True)
class IdentitySpec:
    """The identity MultiKueue uses on every worker, and the life of its tokens."""

    namespace: str = DEFAULT_IDENTITY_NAMESPACE
    service_account: str = DEFAULT_SERVICE_ACCOUNT
    token_lifetime_seconds: int = DEFAULT_TOKEN_LIFETIME_SECONDS
    rotate_before_seconds: int = DEFAULT_ROTATE_BEFORE_SECONDS

    @property
    def role_name(self) -> str:
        """ClusterRole and ClusterRoleBinding name: unique per identity, so two fleets coexist."""
        return f"{self.namespace}:{self.service_account}"

    @property
    def subject(self) -> str:
        """The user name Kubernetes gives the service account's tokens."""
        return f"system:serviceaccount:{self.namespace}:{self.service_account}"


@dataclass(frozen=True, slots=True)
class MirroredQueue:
    name: str
    """LocalQueue name: the same on manager and workers, as MultiKueue requires."""
    cluster_queue: str
    """The worker ClusterQueue the LocalQueue feeds."""


@dataclass(frozen=True, slots=True)
class MirroredNamespace:
    name: str
    queues: tuple[MirroredQueue, ...] = ()


@dataclass(frozen=True, slots=True)
class DispatchConfig:
    """One list of workers and the AdmissionCheck that points at it: upstream's
    MultiKueueConfig up to its 20 clusters, fleetq's MultiKueueClusterSet past that."""

    name: str
    admission_check: str
    workers: tuple[str, ...]
    """Worker names in order of preference."""

    @property
    def uses_cluster_set(self) -> bool:
        """Whether the workers exceed what an upstream MultiKueueConfig may list."""
        return len(self.workers) > MAX_CLUSTERS_PER_CONFIG


@dataclass(frozen=True, slots=True)
class DispatchSpec:
    dispatcher: str = DEFAULT_DISPATCHER
    """The hub Configuration's multiKueue.dispatcherName this fleet is meant for."""
    configs: tuple[DispatchConfig, ...] = ()


@dataclass(frozen=True, slots=True)
class FleetFile:
    path: Path
    manager: ManagerSpec
    workers: tuple[WorkerSpec, ...]
    identity: IdentitySpec = field(default_factory=IdentitySpec)
    mirror: tuple[MirroredNamespace, ...] = ()
    dispatch: DispatchSpec = field(default_factory=DispatchSpec)

    def worker(self, name: str) -> WorkerSpec:
        for worker in self.workers:
            if worker.name == name:
                return worker
        raise KeyError(name)


def load_fleet_file(path: Path) -> FleetFile:
    """Read and check a fleet file; relative kubeconfig paths are taken from its folder."""
    try:
        text = path.read_text()
    except OSError as error:
        raise FleetFileError(f"cannot read fleet file {path}: {error.strerror}") from None
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise FleetFileError(f"fleet file {path} is not valid YAML: {error}") from None
    return parse_fleet_file(document, path)


def parse_fleet_file(document: Any, path: Path) -> FleetFile:
    """Check a parsed fleet file; `path` names it in messages and anchors relative paths."""
    root = _Section(document, "", path)
    root.constant("apiVersion", FILE_API_VERSION)
    root.constant("kind", FILE_KIND)
    manager = _manager(root.section("manager", required=True), path.parent)
    identity = _identity(root.section("identity"))
    workers = _workers(root, path.parent)
    mirror = _mirror(root)
    dispatch = _dispatch(root.section("dispatch"), workers)
    root.finish()
    return FleetFile(path, manager, workers, identity, mirror, dispatch)


class _Section:
    """One mapping of the file: typed reads, with the place named in every error."""

    def __init__(self, value: Any, where: str, path: Path) -> None:
        self.where = where
        self.path = path
        if value is None:
            value = {}
        if not isinstance(value, Mapping):
            raise self.error(f"must be a mapping, not {type(value).__name__}")
        self.value = value
        self.read: set[str] = set()

    def error(self, message: str, key: str | None = None) -> FleetFileError:
        place = ".".join(part for part in (self.where, key) if part) or "top level"
        return FleetFileError(f"{self.path}: {place}: {message}")

    def raw(self, key: str) -> Any:
        self.read.add(key)
        return self.value.get(key)

    def text(self, key: str, *, required: bool = False) -> str | None:
        value = self.raw(key)
        if value is None or value == "":
            if required:
                raise self.error("is required", key)
            return None
        if not isinstance(value, str):
            raise self.error(f"must be a string, not {type(value).__name__}", key)
        return value

    def name(self, key: str, kind: str, *, label: bool = False, default: str = "") -> str:
        """A Kubernetes object name: a DNS-1123 label (≤63) or subdomain (≤253)."""
        value = self.text(key, required=not default) or default
        check_name(value, kind, label=label, error=lambda m: self.error(m, key))
        return value

    def duration(self, key: str, default: int) -> int:
        value = self.raw(key)
        if value is None:
            return default
        try:
            return parse_duration(value)
        except DurationError as problem:
            raise self.error(str(problem), key) from None

    def section(self, key: str, *, required: bool = False) -> _Section:
        value = self.raw(key)
        if value is None and required:
            raise self.error("is required", key)
        return _Section(value, self._child(key), self.path)

    def items(self, key: str) -> Iterator[_Section]:
        value = self.raw(key)
        if value is None:
            return
        if not isinstance(value, list):
            raise self.error(f"must be a list, not {type(value).__name__}", key)
        for index, item in enumerate(value):
            yield _Section(item, f"{self._child(key)}[{index}]", self.path)

    def strings(self, key: str) -> tuple[str, ...] | None:
        value = self.raw(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.error("must be a list of strings", key)
        return tuple(value)

    def constant(self, key: str, expected: str) -> None:
        value = self.raw(key)
        if value is not None and value != expected:
            raise self.error(f"must be {expected!r}, not {value!r}", key)

    def finish(self) -> None:
        unknown = sorted(str(key) for key in self.value if key not in self.read)
        if unknown:
            known = ", ".join(sorted(self.read))
            raise self.error(f"unknown field(s) {', '.join(unknown)} (known here: {known})")

    def _child(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key


def check_name(value: str, kind: str, *, label: bool, error: Callable[[str], Exception]) -> None:
    """Raise `error(message)` unless `value` is a valid object name of that shape."""
    limit, pattern = (63, _LABEL) if label else (253, _SUBDOMAIN)
    if len(value) > limit or not pattern.match(value):
        shape = "DNS-1123 label" if label else "DNS-1123 subdomain"
        raise error(
            f"{value!r} is not a valid {kind} name (a {shape}: at most {limit} lowercase "
            "letters, digits, '-' or '.', starting and ending with a letter or digit)"
        )


def _cluster_ref(section: _Section, base: Path) -> ClusterRef:
    kubeconfig = section.text("kubeconfig")
    path = None
    if kubeconfig:
        path = Path(kubeconfig).expanduser()
        if not path.is_absolute():
            path = base / path
    return ClusterRef(context=section.text("context"), kubeconfig=path)


def _manager(section: _Section, base: Path) -> ManagerSpec:
    cluster = _cluster_ref(section, base)
    namespace = section.name("namespace", "namespace", label=True, default=DEFAULT_HUB_NAMESPACE)
    section.finish()
    return ManagerSpec(cluster, namespace)


def _identity(section: _Section) -> IdentitySpec:
    namespace = section.name(
        "namespace", "namespace", label=True, default=DEFAULT_IDENTITY_NAMESPACE
    )
    account = section.name("serviceAccount", "ServiceAccount", default=DEFAULT_SERVICE_ACCOUNT)
    lifetime = section.duration("tokenLifetime", DEFAULT_TOKEN_LIFETIME_SECONDS)
    if lifetime < MIN_TOKEN_LIFETIME_SECONDS:
        raise section.error(
            f"must be at least 10m ({MIN_TOKEN_LIFETIME_SECONDS}s, the TokenRequest minimum)",
            "tokenLifetime",
        )
    rotate_before = section.duration("rotateBefore", DEFAULT_ROTATE_BEFORE_SECONDS)
    section.finish()
    return IdentitySpec(namespace, account, lifetime, rotate_before)


def _workers(root: _Section, base: Path) -> tuple[WorkerSpec, ...]:
    workers: list[WorkerSpec] = []
    seen_secrets: set[str] = set()
    for section in root.items("workers"):
        name = section.name("name", "worker (MultiKueueCluster)")
        if name == RESERVED_WORKER_NAME:
            raise section.error(f"{name!r} names the manager; call the worker otherwise", "name")
        if any(worker.name == name for worker in workers):
            raise section.error(f"worker {name!r} is listed twice", "name")
        cluster = _cluster_ref(section, base)
        secret = section.name("secretName", "Secret", default=f"{name}-kubeconfig")
        if secret in seen_secrets:
            raise section.error(f"Secret {secret!r} is used by another worker", "secretName")
        seen_secrets.add(secret)
        server = section.text("server")
        if server is not None and not server.startswith("https://"):
            raise section.error(f"{server!r} must be an https:// URL", "server")
        section.finish()
        workers.append(WorkerSpec(name, cluster, secret, server))
    if not workers:
        raise root.error("lists no cluster; add at least one worker", "workers")
    return tuple(workers)


def _mirror(root: _Section) -> tuple[MirroredNamespace, ...]:
    namespaces: list[MirroredNamespace] = []
    for section in root.items("mirror"):
        name = section.name("namespace", "namespace", label=True)
        if any(existing.name == name for existing in namespaces):
            raise section.error(f"namespace {name!r} is listed twice", "namespace")
        queues: list[MirroredQueue] = []
        for queue in section.items("localQueues"):
            queue_name = queue.name("name", "LocalQueue")
            if any(existing.name == queue_name for existing in queues):
                raise queue.error(f"LocalQueue {queue_name!r} is listed twice", "name")
            cluster_queue = queue.name("clusterQueue", "ClusterQueue")
            queue.finish()
            queues.append(MirroredQueue(queue_name, cluster_queue))
        section.finish()
        namespaces.append(MirroredNamespace(name, tuple(queues)))
    return tuple(namespaces)


def _dispatch(section: _Section, workers: tuple[WorkerSpec, ...]) -> DispatchSpec:
    dispatcher = section.text("dispatcher") or DEFAULT_DISPATCHER
    if not _DISPATCHER_NAME.match(dispatcher):
        raise section.error(
            f"{dispatcher!r} is not a dispatcher name (a domain-prefixed path such as "
            f"{DEFAULT_DISPATCHER})",
            "dispatcher",
        )
    names = tuple(worker.name for worker in workers)
    configs: list[DispatchConfig] = []
    for entry in section.items("configs"):
        configs.append(_dispatch_config(entry, names))
    if not configs:
        configs.append(DispatchConfig(DEFAULT_CONFIG_NAME, DEFAULT_CONFIG_NAME, names))
        if len(names) > MAX_CLUSTERS_PER_SET:
            raise section.error(
                f"{len(names)} workers do not fit one MultiKueueClusterSet (at most "
                f"{MAX_CLUSTERS_PER_SET}); list several under dispatch.configs",
            )
    for attribute, kind in (("name", "MultiKueueConfig"), ("admission_check", "AdmissionCheck")):
        values = [getattr(config, attribute) for config in configs]
        duplicates = sorted({value for value in values if values.count(value) > 1})
        if duplicates:
            raise section.error(f"{kind} {', '.join(duplicates)} defined twice", "configs")
    section.finish()
    return DispatchSpec(dispatcher, tuple(configs))


def _dispatch_config(section: _Section, workers: tuple[str, ...]) -> DispatchConfig:
    # The AdmissionCheck refers to the config by a DNS-1123 label, so the config name is one.
    name = section.name("name", "MultiKueueConfig", label=True)
    check = section.name("admissionCheck", "AdmissionCheck", default=name)
    order = section.strings("workers") or workers
    unknown = [worker for worker in order if worker not in workers]
    if unknown:
        raise section.error(
            f"names unknown worker(s) {', '.join(unknown)} (workers: {', '.join(workers)})",
            "workers",
        )
    repeated = sorted({worker for worker in order if order.count(worker) > 1})
    if repeated:
        raise section.error(f"lists {', '.join(repeated)} more than once", "workers")
    if len(order) > MAX_CLUSTERS_PER_SET:
        raise section.error(
            f"{len(order)} workers exceed a MultiKueueClusterSet's limit of "
            f"{MAX_CLUSTERS_PER_SET}; split them over several configs",
            "workers",
        )
    section.finish()
    return DispatchConfig(name, check, order)

"""One `fleetq join`: check every cluster, set up each worker, then register them on the manager.

Three phases, each only after the one before succeeded for the clusters concerned:
1. preflight, changing nothing: every context resolves, every apiserver answers, the CLI's
   credentials may do every verb join uses, every worker's kubeconfig can be inlined for the
   hub. Any failure ends the run here, with all problems listed;
2. workers (in parallel): identity, RBAC, mirrored namespaces and LocalQueues, then a token
   (kept while valid, minted when missing or due) and the kubeconfig built around it;
3. manager: hub namespace, per worker the Secret and MultiKueueCluster, per dispatch config
   the MultiKueueConfig and AdmissionCheck.
Every write is a server-side apply as `fleetq-join`, so a second run changes nothing. With
`dry_run` every apply is a server-side dry run and no token is minted.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from cli.join.access_checks import manager_needs, missing_access, worker_needs
from cli.join.apply_outcome import Outcome, changed_fields, classify
from cli.join.cluster_rest import DEFAULT_TIMEOUT, ApiCallError, ClusterCallError, ClusterRest
from cli.join.duration_text import format_duration
from cli.join.fleet_file import FleetFile, WorkerSpec
from cli.join.join_report import (
    JoinEvent,
    JoinReport,
    Notice,
    NoticeLevel,
    ObjectResult,
    TokenAction,
    TokenResult,
)
from cli.join.kube_contexts import ClusterEndpoint, ContextError, resolve_endpoint
from cli.join.manager_objects import (
    admission_check_manifest,
    cluster_list_manifest,
    kubeconfig_secret_manifest,
    multikueue_cluster_manifest,
)
from cli.join.minted_kubeconfig import (
    KubeconfigShapeError,
    build_worker_kubeconfig,
    render_kubeconfig,
)
from cli.join.queue_mirror import cluster_queues_named, mirror_manifests
from cli.join.resource_paths import KINDS, display_name, kind_of, manifest_path
from cli.join.service_account_token import TokenRequestError, mint_token
from cli.join.token_rotation import decide_token
from cli.join.worker_identity import Manifest, identity_manifests, namespace_manifest
from core.api.kube_time import format_time
from hub.multikueue.connections.kubeconfig_safety import find_insecurity

MANAGER = "manager"
DRY_RUN_TOKEN = "token-minted-at-join"
"""Stands in for a token a dry run does not mint."""

Progress = Callable[[JoinEvent], None]


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class JoinOptions:
    dry_run: bool = False
    rotate: bool = False
    rotate_before_seconds: int | None = None
    """Overrides the file's identity.rotateBefore."""
    context_overrides: Mapping[str, str] = field(default_factory=dict)
    """Cluster (`manager` or a worker name) → kubeconfig context to use instead."""
    parallel: int = 4
    timeout: tuple[float, float] = DEFAULT_TIMEOUT
    clock: Callable[[], datetime] = _utc_now


@dataclass(frozen=True, slots=True)
class _Credentials:
    kubeconfig_text: str
    expires_at: datetime


def run_join(
    fleet: FleetFile, options: JoinOptions, progress: Progress | None = None
) -> JoinReport:
    """Join the fleet; problems are in the report (`report.ok`), never raised."""
    report = JoinReport(dry_run=options.dry_run, dispatcher=fleet.dispatch.dispatcher)
    lock = threading.Lock()

    def emit(event: JoinEvent) -> None:
        with lock:
            report.record(event)
            if progress is not None:
                progress(event)

    endpoints = _resolve_endpoints(fleet, options, emit)
    if endpoints is None:
        return report
    rests: dict[str, ClusterRest] = {}
    try:
        for label, endpoint in endpoints.items():
            rests[label] = ClusterRest(endpoint, timeout=options.timeout)
    except Exception as error:  # the client refuses the kubeconfig (bad certificate data, ...)
        emit(Notice(label, NoticeLevel.ERROR, f"{label}: cannot use context: {error}"))
        _close(rests)
        return report
    try:
        if not _preflight(fleet, rests, options, emit):
            return report
        credentials = _join_workers(fleet, rests, options, emit)
        _join_manager(fleet, rests[MANAGER], credentials, options, emit)
        emit(
            Notice(
                MANAGER,
                NoticeLevel.INFO,
                "dispatch: run the hub with multiKueue.dispatcherName "
                f"{fleet.dispatch.dispatcher!r}; put admission check(s) "
                f"{', '.join(c.admission_check for c in fleet.dispatch.configs)} on the "
                "manager ClusterQueues that dispatch to workers",
            )
        )
    finally:
        _close(rests)
    return report


def _close(rests: Mapping[str, ClusterRest]) -> None:
    for rest in rests.values():
        rest.close()


def _resolve_endpoints(
    fleet: FleetFile, options: JoinOptions, emit: Progress
) -> dict[str, ClusterEndpoint] | None:
    refs = {MANAGER: fleet.manager.cluster} | {w.name: w.cluster for w in fleet.workers}
    unknown = sorted(set(options.context_overrides) - set(refs))
    for label in unknown:
        emit(
            Notice(
                label,
                NoticeLevel.ERROR,
                f"--context-override names {label!r}, which is neither 'manager' nor a worker "
                f"of {fleet.path} ({', '.join(w.name for w in fleet.workers)})",
            )
        )
    endpoints: dict[str, ClusterEndpoint] = {}
    for label, ref in refs.items():
        override = options.context_overrides.get(label)
        if override:
            ref = dataclasses.replace(ref, context=override)
        try:
            endpoints[label] = resolve_endpoint(label, ref)
        except ContextError as error:
            emit(Notice(label, NoticeLevel.ERROR, str(error)))
    return endpoints if len(endpoints) == len(refs) and not unknown else None


def _preflight(
    fleet: FleetFile, rests: Mapping[str, ClusterRest], options: JoinOptions, emit: Progress
) -> bool:
    def check(label: str) -> list[str]:
        rest = rests[label]
        endpoint = rest.endpoint
        problems: list[str] = []
        if label != MANAGER:
            problems.extend(_hub_kubeconfig_problems(fleet.worker(label), endpoint))
        try:
            version = rest.server_version()
            needs = manager_needs(fleet) if label == MANAGER else worker_needs(fleet)
            missing = missing_access(rest, needs)
        except ClusterCallError as error:
            return [*problems, str(error)]
        if missing:
            problems.append(
                f"{label}: the credentials of context {endpoint.context!r} lack permissions: "
                + "; ".join(f"cannot {need.describe()}" for need in missing)
            )
        if not problems:
            emit(
                Notice(
                    label,
                    NoticeLevel.INFO,
                    f"reachable: context {endpoint.context}, {endpoint.server}, "
                    f"Kubernetes {version}",
                )
            )
        return problems

    with ThreadPoolExecutor(max_workers=max(1, options.parallel)) as pool:
        results = dict(zip(rests, pool.map(check, rests), strict=True))
    for label, problems in results.items():
        for problem in problems:
            emit(Notice(label, NoticeLevel.ERROR, problem))
    return not any(results.values())


def _hub_kubeconfig_problems(worker: WorkerSpec, endpoint: ClusterEndpoint) -> list[str]:
    """Would the hub accept the kubeconfig join is going to mint? Checked before any write."""
    try:
        document = build_worker_kubeconfig(
            worker=worker.name,
            server=worker.server or endpoint.server,
            ca_data=endpoint.ca_data or "",
            token=DRY_RUN_TOKEN,
            user="check",
        )
    except KubeconfigShapeError as error:
        return [str(error)]
    problem = find_insecurity(document)
    if problem:
        server = worker.server or endpoint.server
        return [
            f"{worker.name}: the hub would refuse the minted kubeconfig: {problem} "
            f"(server {server}); set the worker's `server` in the fleet file"
        ]
    return []


class _Applier:
    """Applies manifests to one cluster and reports each outcome."""

    def __init__(self, label: str, rest: ClusterRest, dry_run: bool, emit: Progress) -> None:
        self.label = label
        self.rest = rest
        self.dry_run = dry_run
        self.emit = emit
        self.new_namespaces: set[str] = set()
        """Namespaces a dry run would create: objects in them cannot be dry-run yet."""

    def apply(self, manifest: Manifest, note: str = "") -> None:
        metadata = manifest["metadata"]
        namespace = metadata.get("namespace")
        if self.dry_run and namespace in self.new_namespaces:
            self.emit(
                ObjectResult(
                    self.label,
                    display_name(manifest),
                    Outcome.CREATED,
                    note=note or "its namespace is new",
                )
            )
            return
        path = manifest_path(manifest)
        try:
            before = self.rest.get(path)
            after = self.rest.apply(path, manifest, dry_run=self.dry_run)
        except ApiCallError as error:
            raise _explained(error, manifest) from None
        outcome = classify(before, after)
        if manifest["kind"] == "Namespace" and outcome is Outcome.CREATED:
            self.new_namespaces.add(metadata["name"])
        fields = tuple(changed_fields(before, after)) if outcome is Outcome.CHANGED else ()
        self.emit(ObjectResult(self.label, display_name(manifest), outcome, fields, note))


def _explained(error: ApiCallError, manifest: Manifest) -> ClusterCallError:
    kind = kind_of(manifest)
    if error.status == 404 and "could not find the requested resource" in error.server_message:
        return ClusterCallError(
            f"{error.args[0]} — this cluster does not serve {kind.api_version} "
            f"{manifest['kind']}; install the CRDs first (fleetq's helm chart or upstream Kueue)"
        )
    return error


def _join_workers(
    fleet: FleetFile, rests: Mapping[str, ClusterRest], options: JoinOptions, emit: Progress
) -> dict[str, _Credentials]:
    def join(worker: WorkerSpec) -> tuple[str, _Credentials | None]:
        try:
            return worker.name, _join_worker(fleet, worker, rests, options, emit)
        except (ClusterCallError, KubeconfigShapeError, TokenRequestError) as error:
            emit(Notice(worker.name, NoticeLevel.ERROR, str(error)))
            return worker.name, None

    with ThreadPoolExecutor(max_workers=max(1, options.parallel)) as pool:
        joined = dict(pool.map(join, fleet.workers))
    return {name: credentials for name, credentials in joined.items() if credentials}


def _join_worker(
    fleet: FleetFile,
    worker: WorkerSpec,
    rests: Mapping[str, ClusterRest],
    options: JoinOptions,
    emit: Progress,
) -> _Credentials:
    rest = rests[worker.name]
    identity = fleet.identity
    applier = _Applier(worker.name, rest, options.dry_run, emit)
    for manifest in identity_manifests(identity):
        applier.apply(manifest)
    for manifest in mirror_manifests(fleet.mirror):
        applier.apply(manifest, note="mirrored")
    _warn_missing_cluster_queues(fleet, worker.name, rest, emit)

    account = rest.get(
        KINDS["ServiceAccount"].object_path(identity.service_account, identity.namespace)
    )
    secret_path = KINDS["Secret"].object_path(worker.secret_name, fleet.manager.namespace)
    now = options.clock()
    rotate_before = options.rotate_before_seconds
    if rotate_before is None:
        rotate_before = identity.rotate_before_seconds
    decision = decide_token(
        rests[MANAGER].get(secret_path),
        subject=identity.subject,
        account_uid=_uid(account),
        now=now,
        rotate=options.rotate,
        rotate_before=timedelta(seconds=rotate_before),
    )
    if not decision.mint and decision.token and decision.expires_at:
        token, expires_at, action = decision.token, decision.expires_at, TokenAction.KEPT
    elif options.dry_run:
        token, action = DRY_RUN_TOKEN, TokenAction.WOULD_MINT
        expires_at = now + timedelta(seconds=identity.token_lifetime_seconds)
    else:
        minted = mint_token(rest, identity)
        token, expires_at, action = minted.token, minted.expires_at, TokenAction.MINTED
    emit(TokenResult(worker.name, action, decision.mint_reason, expires_at, decision.rotation_due))
    if decision.rotation_due:
        emit(
            Notice(
                worker.name,
                NoticeLevel.WARNING,
                f"token expires in {format_duration((expires_at - now).total_seconds())} "
                f"({format_time(expires_at)}); renew it with `fleetq join --rotate`",
            )
        )
    endpoint = rest.endpoint
    document = build_worker_kubeconfig(
        worker=worker.name,
        server=worker.server or endpoint.server,
        ca_data=endpoint.ca_data or "",
        token=token,
        user=identity.service_account,
    )
    return _Credentials(render_kubeconfig(document), expires_at)


def _uid(obj: Mapping[str, Any] | None) -> str | None:
    if not obj:
        return None
    uid = (obj.get("metadata") or {}).get("uid")
    return str(uid) if uid else None


def _warn_missing_cluster_queues(
    fleet: FleetFile, label: str, rest: ClusterRest, emit: Progress
) -> None:
    for name in cluster_queues_named(fleet.mirror):
        if rest.get(KINDS["ClusterQueue"].object_path(name)) is None:
            emit(
                Notice(
                    label,
                    NoticeLevel.WARNING,
                    f"ClusterQueue {name!r} does not exist on this worker; the LocalQueues "
                    "pointing at it stay inactive (and remote workloads pending) until it does",
                )
            )


def _join_manager(
    fleet: FleetFile,
    rest: ClusterRest,
    credentials: Mapping[str, _Credentials],
    options: JoinOptions,
    emit: Progress,
) -> None:
    applier = _Applier(MANAGER, rest, options.dry_run, emit)
    try:
        applier.apply(namespace_manifest(fleet.manager.namespace))
        for worker in fleet.workers:
            worker_credentials = credentials.get(worker.name)
            if worker_credentials is None:
                emit(
                    Notice(
                        MANAGER,
                        NoticeLevel.WARNING,
                        f"Secret and MultiKueueCluster of {worker.name} skipped: the worker "
                        "was not set up",
                    )
                )
                continue
            secret = kubeconfig_secret_manifest(
                worker,
                fleet.manager.namespace,
                worker_credentials.kubeconfig_text,
                expires_at=worker_credentials.expires_at,
                subject=fleet.identity.subject,
            )
            applier.apply(secret, note=f"kubeconfig of {worker.name}")
            applier.apply(multikueue_cluster_manifest(worker))
        for config in fleet.dispatch.configs:
            applier.apply(cluster_list_manifest(config), note=" > ".join(config.workers))
            applier.apply(admission_check_manifest(config))
    except ClusterCallError as error:
        emit(Notice(MANAGER, NoticeLevel.ERROR, str(error)))

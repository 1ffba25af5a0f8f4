"""`fleetq logs JOB [-f] [-c CONTAINER]`: a job's pod logs, from whichever worker runs it.

The manager's Workload for the Job says where it runs (`status.clusterName`); the CLI
reaches that worker through the kubeconfig Secret the hub uses, finds the Job's pods there
and prints every pod's log, each line prefixed with `[pod]` (or `[pod/container]`). With
`-f` all pods stream at once until they end or Ctrl-C. Exit status: 0 when every log was
read, 1 when the job is unknown, not running on a worker yet, or a log could not be read
(the apiserver's reason is printed), 2 for wrong arguments.
"""

from __future__ import annotations

import argparse
import queue
import sys
import threading
from collections.abc import Callable
from typing import Any

from cli.ops.describe_command import find_workload
from cli.ops.kueue_reads import get_object
from cli.ops.manager_target import add_cluster_options, add_hub_namespace_option, manager_target
from cli.ops.ops_errors import ExitStatus, NotFoundError, OpsError
from cli.ops.worker_pod_logs import (
    LogReadError,
    LogSource,
    PodLogReader,
    job_pods,
    log_sources,
    selected_pods,
)
from cli.ops.workload_phase import workload_phase
from cli.ops.workload_story import pending_reason
from core.api.multikueue import MultiKueueCluster
from integrations.batch_job.kind import BATCH_JOB
from integrations.framework.job_kind import JobKind
from integrations.framework.pod_selector import SelectsPodsFromStatus
from integrations.registry import REGISTRY

Emit = Callable[[str], None]


def register(commands: Any) -> None:
    logs = commands.add_parser(
        "logs",
        help="print (or -f stream) a job's pod logs from the worker it runs on",
    )
    logs.add_argument("job", metavar="JOB", help="the Job's name (or its Workload's)")
    add_cluster_options(logs, namespaced=False)
    logs.add_argument("-n", "--namespace", help="namespace (default: the context's)")
    logs.add_argument("-f", "--follow", action="store_true", help="stream until the pods end")
    logs.add_argument("-c", "--container", help="only this container (default: all)")
    add_hub_namespace_option(logs)
    logs.set_defaults(handler=run_logs)


def run_logs(args: argparse.Namespace) -> int:
    from cli.join.cluster_rest import ClusterRest
    from cli.ops.worker_access import WORKER_TIMEOUT, worker_endpoint

    try:
        target = manager_target(args)
        namespace = target.namespace or "default"
        with target.rest() as manager:
            workload = find_workload(manager, namespace, args.job)
            worker = workload.status.cluster_name
            if not worker:
                why = pending_reason(workload)
                raise OpsError(
                    f"job {args.job} does not run on a worker yet (workload "
                    f"{workload.metadata.name} is {workload_phase(workload).value}"
                    f"{': ' + why if why else ''})"
                )
            try:
                cluster = get_object(manager, MultiKueueCluster, worker)
            except NotFoundError:
                raise OpsError(
                    f"job {args.job} runs on worker {worker}, but the manager has no "
                    f"MultiKueueCluster {worker} to reach it through"
                ) from None
            endpoint = worker_endpoint(manager, cluster, args.hub_namespace)
        with ClusterRest(endpoint, timeout=WORKER_TIMEOUT) as worker_rest:
            job_name, kind = job_of(workload, args.job)
            selector = status_selector(worker_rest, namespace, kind, job_name)
            if selector is not None:
                pods = selected_pods(worker_rest, namespace, selector)
            else:
                pods = job_pods(worker_rest, namespace, job_name, kind.pod_name_labels)
        if not pods:
            raise OpsError(f"job {job_name} has no pods on worker {worker} (yet)")
        sources = log_sources(pods, args.container)
        if not sources:
            raise OpsError(
                f"no pod of job {job_name} on worker {worker} has a container {args.container}"
            )
    except OpsError as error:
        print(f"fleetq logs: {error}", file=sys.stderr)
        return error.status
    reader = PodLogReader(endpoint, namespace, follow=args.follow)
    try:
        failures = stream_logs(reader, sources, print_line, print_problem)
    finally:
        reader.close()
    return ExitStatus.FAILED if failures else ExitStatus.OK


def job_of(workload: Any, asked: str) -> tuple[str, JobKind]:
    """The job's name (the owner's, when `asked` named the Workload itself) and its kind
    (from the job-framework registry; a batch Job when no owner is a known kind)."""
    for owner in workload.metadata.owner_references:
        kind = REGISTRY.for_owner(owner.api_version, owner.kind)
        if kind is not None:
            return str(owner.name), kind
    return asked, BATCH_JOB


def status_selector(rest: Any, namespace: str, kind: JobKind, job_name: str) -> str | None:
    """For a kind whose pods only its status names (a RayJob's cluster): the selector the
    worker's copy of the job gives; None for other kinds, or while it gives none."""
    if not isinstance(kind, SelectsPodsFromStatus):
        return None
    from cli.join.cluster_rest import ApiCallError, ClusterCallError

    resource = kind.resource
    path = f"/apis/{resource.group}/{resource.version}/namespaces/{namespace}"
    try:
        job = rest.request("GET", f"{path}/{resource.plural}/{job_name}")
    except (ApiCallError, ClusterCallError):
        return None
    return kind.pod_label_selector(job)


def stream_logs(reader: PodLogReader, sources: list[LogSource], emit: Emit, problem: Emit) -> int:
    """Read every source (concurrently with -f, in order without); the number that failed."""
    if not reader.follow:
        failures = 0
        for source in sources:
            failures += not _read_one(reader, source, emit, problem)
        return failures
    lines: queue.Queue[tuple[str, bool] | None] = queue.Queue()
    outcomes: list[bool] = []

    def pump(source: LogSource) -> None:
        ok = _read_one(
            reader,
            source,
            lambda line: lines.put((line, False)),
            lambda line: lines.put((line, True)),
        )
        outcomes.append(ok)
        lines.put(None)

    for source in sources:
        threading.Thread(target=pump, args=(source,), daemon=True).start()
    running = len(sources)
    while running:
        item = lines.get()
        if item is None:
            running -= 1
        elif item[1]:
            problem(item[0])
        else:
            emit(item[0])
    return outcomes.count(False)


def _read_one(reader: PodLogReader, source: LogSource, emit: Emit, problem: Emit) -> bool:
    """Print one container's log; False when it could not be read."""
    if not source.node:
        problem(f"{source.prefix} no logs yet: the pod is not on a node (not scheduled)")
        return True
    try:
        for line in reader.lines(source):
            emit(f"{source.prefix} {line}")
    except LogReadError as error:
        problem(f"{source.prefix} cannot read logs: {error}")
        return False
    return True


def print_line(line: str) -> None:
    print(line, flush=True)


def print_problem(line: str) -> None:
    print(line, file=sys.stderr, flush=True)

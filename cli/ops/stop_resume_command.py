"""`fleetq stop|resume clusterqueue|localqueue|workload NAME`: hold and release work.

Queues use their `spec.stopPolicy` (kueuectl's semantics): `stop` sets Hold — no new
admissions, admitted workloads run on — or HoldAndDrain with `--drain`, which also evicts
them; `resume` sets None. A workload uses `spec.active`: `stop` sets false (the hub evicts
it and keeps it out of the queue), `resume` sets true. Each is one merge patch, so running
it twice changes nothing the second time. Exit status: 0 done (or already so), 1 not found
or refused, 2 wrong arguments.
"""

from __future__ import annotations

import argparse
import enum
import sys
from dataclasses import dataclass
from typing import Any

from cli.join.cluster_rest import ApiCallError, ClusterCallError, ClusterRest
from cli.ops.manager_target import add_cluster_options, manager_target
from cli.ops.ops_errors import ExitStatus, NotFoundError, OpsError
from core.api.api_struct import ApiStruct
from core.api.cluster_queue import ClusterQueue, StopPolicy
from core.api.local_queue import LocalQueue
from core.api.registry import KindInfo, kind_info
from core.api.workload import Workload
from core.manager.field_manager import CLI_FIELD_MANAGER


class Target(enum.StrEnum):
    CLUSTER_QUEUE = "clusterqueue"
    LOCAL_QUEUE = "localqueue"
    WORKLOAD = "workload"

    @property
    def kind(self) -> KindInfo:
        return kind_info(_KINDS[self])


_KINDS: dict[Target, type[ApiStruct]] = {
    Target.CLUSTER_QUEUE: ClusterQueue,
    Target.LOCAL_QUEUE: LocalQueue,
    Target.WORKLOAD: Workload,
}
_ALIASES = {
    Target.CLUSTER_QUEUE: ["cq", "clusterqueues"],
    Target.LOCAL_QUEUE: ["lq", "localqueues"],
    Target.WORKLOAD: ["wl", "workloads"],
}


@dataclass(frozen=True, slots=True)
class StopChange:
    """What one stop/resume did: the value before and after, and a sentence for people."""

    object: str
    before: str
    after: str

    @property
    def changed(self) -> bool:
        return self.before != self.after


def register(commands: Any) -> None:
    for verb in ("stop", "resume"):
        action = commands.add_parser(
            verb,
            help="stop admitting (queues) or deactivate (workload)"
            if verb == "stop"
            else "undo stop: admit again (queues) or reactivate (workload)",
        )
        kinds = action.add_subparsers(dest="kind", metavar="KIND", required=True)
        for target in Target:
            sub = kinds.add_parser(
                target.value, aliases=_ALIASES[target], help=f"{verb} a {target.kind.kind}"
            )
            sub.add_argument("name", metavar="NAME")
            add_cluster_options(sub, namespaced=False)
            if target is not Target.CLUSTER_QUEUE:
                sub.add_argument("-n", "--namespace", help="namespace (default: the context's)")
            if verb == "stop" and target is not Target.WORKLOAD:
                sub.add_argument(
                    "--drain",
                    action="store_true",
                    help="HoldAndDrain: also evict the admitted workloads (default: Hold)",
                )
            sub.set_defaults(handler=run_stop_resume, verb=verb, target=target)


def run_stop_resume(args: argparse.Namespace) -> int:
    target: Target = args.target
    try:
        manager = manager_target(args)
        namespace = manager.namespace or "default"
        with manager.rest() as rest:
            change = set_stopped(
                rest,
                target,
                args.name,
                namespace,
                stop=args.verb == "stop",
                drain=getattr(args, "drain", False),
            )
    except OpsError as error:
        print(f"fleetq {args.verb} {target.value}: {error}", file=sys.stderr)
        return error.status
    if change.changed:
        print(f"{change.object} {'stopped' if args.verb == 'stop' else 'resumed'} ({change.after})")
    else:
        print(f"{change.object} unchanged (already {change.after})")
    return ExitStatus.OK


def set_stopped(
    rest: ClusterRest, target: Target, name: str, namespace: str, *, stop: bool, drain: bool
) -> StopChange:
    info = target.kind
    path = info.path(namespace if info.namespaced else None, name)
    label = f"{info.singular}.{info.group}/{name}"
    value: bool | str
    if target is Target.WORKLOAD:
        field, value = "active", not stop
        shown = f"active={str(value).lower()}"
    else:
        policy = StopPolicy.NONE
        if stop:
            policy = StopPolicy.HOLD_AND_DRAIN if drain else StopPolicy.HOLD
        field, value, shown = "stopPolicy", policy.value, f"stopPolicy={policy.value}"
    try:
        current = rest.get(path)
        if current is None:
            where = f' in namespace "{namespace}"' if info.namespaced else ""
            raise NotFoundError(f'{info.singular} "{name}" not found{where}')
        before = (current.get("spec") or {}).get(field, True if field == "active" else "None")
        before_shown = (
            f"active={str(before).lower()}" if field == "active" else f"stopPolicy={before}"
        )
        if before == value:
            return StopChange(label, before_shown, shown)
        rest.request(
            "PATCH",
            path,
            {"spec": {field: value}},
            query={"fieldManager": CLI_FIELD_MANAGER},
            content_type="application/merge-patch+json",
        )
    except ApiCallError as error:
        raise OpsError(str(error)) from None
    except ClusterCallError as error:
        raise OpsError(str(error)) from None
    return StopChange(label, before_shown, shown)

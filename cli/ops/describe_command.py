"""`fleetq describe workload NAME`: one workload's story, its Job and its recent Events.

NAME is a Workload's name, or the name of the Job that owns one (Workload names are
generated from Job names, so users know the Job's). Exit status: 0 when described, 1 when
there is no such workload or the manager cannot be read, 2 for wrong arguments.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from cli.join.cluster_rest import ClusterRest
from cli.ops.kueue_reads import get_object, list_objects
from cli.ops.manager_target import add_cluster_options, manager_target
from cli.ops.ops_errors import NotFoundError, OpsError
from cli.ops.output_format import OutputFormat, add_output_option, print_document, table_console
from cli.ops.queue_positions import QueuePosition, computed_positions, visibility_positions
from cli.ops.workload_listing import read_queue_state
from cli.ops.workload_phase import cluster_queue_of, is_queued
from cli.ops.workload_related import recent_events, related_job
from cli.ops.workload_story import WorkloadStory, tell_story
from cli.ops.workload_topology import topology_lines
from core.api.local_queue import LocalQueue
from core.api.workload import Workload


def register(commands: Any) -> None:
    describe = commands.add_parser("describe", help="tell one workload's story")
    kinds = describe.add_subparsers(dest="kind", metavar="KIND", required=True)
    workload = kinds.add_parser(
        "workload",
        aliases=["workloads", "wl"],
        help="created, queued (position, why pending), admitted, dispatched, evicted, finished",
    )
    workload.add_argument("name", metavar="NAME", help="Workload name, or its Job's name")
    add_cluster_options(workload, namespaced=False)
    workload.add_argument("-n", "--namespace", help="namespace (default: the context's)")
    add_output_option(workload)
    workload.set_defaults(handler=run_describe_workload)


def run_describe_workload(args: argparse.Namespace) -> int:
    try:
        target = manager_target(args)
        namespace = target.namespace or "default"
        with target.rest() as manager:
            story = describe_workload(manager, namespace, args.name)
    except OpsError as error:
        print(f"fleetq describe workload: {error}", file=sys.stderr)
        return error.status
    if args.output is OutputFormat.TABLE:
        print_story(story)
    else:
        print_document(story, args.output)
    return 0


def find_workload(manager: ClusterRest, namespace: str, name: str) -> Workload:
    """The Workload named `name`, else the one a Job named `name` owns."""
    try:
        return get_object(manager, Workload, name, namespace)
    except NotFoundError:
        owned = [
            workload
            for workload in list_objects(manager, Workload, namespace)
            if any(owner.name == name for owner in workload.metadata.owner_references)
        ]
        if len(owned) == 1:
            return owned[0]
        raise NotFoundError(
            f'workload "{name}" not found in namespace "{namespace}" (nor a Workload owned by '
            f"a Job of that name); try `fleetq list workloads -n {namespace}`"
        ) from None


def describe_workload(manager: ClusterRest, namespace: str, name: str) -> WorkloadStory:
    workload = find_workload(manager, namespace, name)
    targets = local_queue_target(manager, workload)
    story = tell_story(workload, targets, queue_position(manager, workload, targets))
    story.job = related_job(manager, workload)
    subjects = [("Workload", workload.metadata.name)]
    if story.job is not None:
        subjects.append((story.job.kind, story.job.name))
    story.events = recent_events(manager, namespace, subjects)
    return story


def local_queue_target(manager: ClusterRest, workload: Workload) -> dict[tuple[str, str], str]:
    """Its LocalQueue → ClusterQueue, when the LocalQueue exists."""
    key = (workload.metadata.namespace, workload.spec.queue_name)
    try:
        queue = get_object(manager, LocalQueue, key[1], key[0])
    except NotFoundError:
        return {}
    return {key: queue.spec.cluster_queue}


def queue_position(
    manager: ClusterRest, workload: Workload, targets: dict[tuple[str, str], str]
) -> QueuePosition | None:
    """Ask the visibility API about its one queue; compute from every Workload only if need be."""
    queue = cluster_queue_of(workload, targets)
    if not queue or not is_queued(workload):
        return None
    key = (workload.metadata.namespace, workload.metadata.name)
    served = visibility_positions(manager, [queue])
    if served is not None:
        return served.get(key)
    workloads, all_targets = read_queue_state(manager, workload.metadata.namespace)
    return computed_positions(workloads, all_targets).get(key)


def print_story(story: WorkloadStory) -> None:
    from rich.table import Table
    from rich.text import Text

    console = table_console()
    for label, value in story_facts(story):
        console.print(Text.assemble((f"{label:<17}", "bold"), " ", value), soft_wrap=True)

    steps = Table(title="story", title_justify="left", box=None, pad_edge=False)
    for column in ("TIME", "STEP", "DETAIL"):
        steps.add_column(column)
    for step in story.steps:
        when = step.time.strftime("%Y-%m-%dT%H:%M:%SZ") if step.time else "-"
        steps.add_row(when, step.step, step.detail)
    console.print(steps)

    if story.events:
        events = Table(title="events", title_justify="left", box=None, pad_edge=False)
        for column in ("TIME", "TYPE", "REASON", "OBJECT", "MESSAGE"):
            events.add_column(column)
        for event in story.events:
            events.add_row(event.time, event.type, event.reason, event.object, event.message)
        console.print(events)
    else:
        console.print("events: none")


def story_facts(story: WorkloadStory) -> list[tuple[str, str]]:
    facts = [
        ("Name:", f"{story.namespace}/{story.name}"),
        ("Status:", story.status.value),
        ("Queue:", f"{story.local_queue or '-'} -> ClusterQueue {story.cluster_queue or '-'}"),
        ("Priority:", str(story.priority)),
    ]
    if story.position is not None:
        facts.append(
            (
                "Position:",
                f"{story.position.cluster_queue} in ClusterQueue, {story.position.local_queue} "
                f"in LocalQueue (0 = next; {story.position.source})",
            )
        )
    if story.pending_reason:
        facts.append(("Pending because:", story.pending_reason))
    facts.append(("Worker:", story.worker or "-"))
    for index, line in enumerate(topology_lines(story.topology)):
        facts.append(("Topology:" if index == 0 else "", line))
    if story.unhealthy_nodes:
        facts.append(("Failed nodes:", ", ".join(story.unhealthy_nodes) + " (pods being moved)"))
    if story.job is not None:
        facts.append(("Job:", job_text(story)))
    return facts


def job_text(story: WorkloadStory) -> str:
    job = story.job
    assert job is not None
    if not job.found:
        return f"{job.kind} {job.name} (not found on the manager)"
    state = "suspended" if job.suspended else "running"
    return (
        f"{job.kind} {job.name}: {state}, active {job.active}, succeeded {job.succeeded}, "
        f"failed {job.failed}"
    )

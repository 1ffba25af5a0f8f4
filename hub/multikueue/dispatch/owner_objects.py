"""A manager Workload's owner job as objects: the manager's, and our copies on a worker.

Most kinds are one object on each side: the job the Workload's controller owner names,
and on a worker the copy of that name carrying this Workload's prebuilt-workload name.
Two kinds differ (`integrations.framework.multikueue_kinds`):
- a pod group (a `ComposedJobs` job whose Workload is the group's): the job is every Pod
  of the group, composed as the manager's job controller composes it, and each Pod is
  copied under its own name, so the copies are as many objects, all naming the Workload;
- a kind whose one copy stands for several Workloads (`NamesRemoteWorkloads`, a
  LeaderWorkerSet): the copy of the owner's name is this Workload's when the kind says it
  stands for it.
Pure lookups over caches; the reconciler decides what to do with what they find.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from core.kube.object_meta import make_key, namespace_of, uid_of
from core.kube.object_store import ObjectStore
from hub.multikueue.dispatch.workload_facts import Json, OwnerFact, metadata
from integrations.framework.job_capabilities import ComposedJobs, composed
from integrations.framework.job_kind import JobKind
from integrations.framework.job_metadata import prebuilt_workload_name
from integrations.framework.multikueue_kinds import names_remote_workloads

Store = ObjectStore[dict[str, Any]]
MEMBERS_INDEX = "multikueue-group-members"
"""Index the reconciler adds to the manager's cache of a composed kind: members by the
`namespace/name` of their composed job (a pod group)."""

View = Callable[[str, Json | None], Json | None]
"""(namespace/name, cached object) -> the object as of our last write (`PendingWrites`)."""


def members_index(parts: ComposedJobs) -> Callable[[Json], tuple[str, ...]]:
    def index(obj: Json) -> tuple[str, ...]:
        name = parts.composed_name(obj)
        return (make_key(namespace_of(obj), name),) if name else ()

    return index


def group_of(kind: JobKind, workload: Json) -> tuple[ComposedJobs, str] | None:
    """The composed kind and group name when `workload` is a composed job's (a pod group)."""
    parts = composed(kind)
    if parts is None:
        return None
    name = parts.composed_name_of_workload(workload)
    return (parts, name) if name else None


def local_job(kind: JobKind, workload: Json, owner: OwnerFact, store: Store) -> Json | None:
    """The manager's job standing for the Workload's owner (None: not cached, or another
    object of that name). A pod group is its members composed; it stands for the owner
    while one of them is an owner of the Workload."""
    namespace = namespace_of(workload)
    group = group_of(kind, workload)
    if group is not None:
        parts, name = group
        members = store.by_index(MEMBERS_INDEX, make_key(namespace, name))
        owners = {
            str(ref.get("uid") or "") for ref in metadata(workload).get("ownerReferences") or ()
        }
        if not any(uid_of(member) in owners for member in members):
            return None
        return parts.compose(namespace, name, members)
    job = store.get(make_key(namespace, owner.name))
    if job is None or (owner.uid and uid_of(job) != owner.uid):
        return None
    return job


def local_objects(kind: JobKind, workload: Json, job: Json) -> list[Json]:
    """The manager objects that are copied one by one (a group's members, else the job)."""
    group = group_of(kind, workload)
    if group is None:
        return [job]
    return list(group[0].members_of(job))


def remote_objects(
    kind: JobKind,
    workload: Json,
    names: Sequence[str],
    store: Store,
    view: View,
) -> list[Json]:
    """Our copies on a worker of the objects named `names` (the owner's name, or a pod
    group's members'), each as of our last write, kept only when it is this Workload's."""
    namespace = namespace_of(workload)
    workload_name = str(metadata(workload).get("name") or "")
    stands_for = names_remote_workloads(kind)
    found: list[Json] = []
    for name in names:
        key = make_key(namespace, name)
        candidate = view(key, store.get(key))
        if candidate is None:
            continue
        if stands_for is not None:
            ours = workload_name in stands_for.remote_workload_names(candidate)
        else:
            ours = prebuilt_workload_name(candidate) == workload_name
        if ours:
            found.append(candidate)
    return found


def copied_names(kind: JobKind, workload: Json, owner: OwnerFact, job: Json | None) -> list[str]:
    """The names of the objects copied for the Workload: a pod group's members (from the
    manager's job; none while it is not cached), else the owner's."""
    group = group_of(kind, workload)
    if group is None:
        return [owner.name]
    if job is None:
        return []
    return [str(metadata(m).get("name") or "") for m in group[0].members_of(job)]

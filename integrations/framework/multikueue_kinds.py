"""Optional MultiKueue capabilities of kinds that are not Job-like: Pods, pod groups,
StatefulSets and LeaderWorkerSets (upstream v0.19.2's pod, statefulset and
leaderworkerset MultiKueue adapters).

A Job-like kind is dispatched because the webhook gave it `spec.managedBy:
kueue.x-k8s.io/multikueue`, and the manager's own controller for it then stays away.
These kinds have no managedBy: instead
- `DispatchedWithoutManagedBy`: every queued job of the kind whose Workload carries a
  MultiKueue check is dispatched (upstream's adapters answer IsJobManagedByKueue "yes");
- `StaysGatedWhenDispatched`: its Pods are never started on the manager while the
  Workload has a MultiKueue check: they stay scheduling-gated there and run on the worker
  (upstream skips local execution of a ComposableJob). Pods of a StatefulSet or a
  LeaderWorkerSet on the manager are such Pods;
- `NamesRemoteWorkloads`: one remote copy stands for several Workloads (a
  LeaderWorkerSet, one Workload per group) and carries no prebuilt-workload name; the
  kind says which Workloads it stands for (upstream's WorkloadKeysFor), which is how the
  hub recognises its copy and the garbage collector its orphans.
A pod group (a `ComposedJobs` job) is copied member by member: every Pod of the group is
a remote object of its Workload, created, status-synced and deleted one by one.
Every method is pure.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from integrations.framework.job_metadata import Job


@runtime_checkable
class DispatchedWithoutManagedBy(Protocol):
    @property
    def dispatched_without_managed_by(self) -> bool: ...


@runtime_checkable
class StaysGatedWhenDispatched(Protocol):
    @property
    def stays_gated_when_dispatched(self) -> bool: ...


@runtime_checkable
class NamesRemoteWorkloads(Protocol):
    def remote_workload_names(self, remote: Job) -> list[str]:
        """The names of the Workloads a worker's copy stands for (empty: none known)."""
        ...


def dispatched_without_managed_by(kind: object) -> bool:
    return isinstance(kind, DispatchedWithoutManagedBy) and kind.dispatched_without_managed_by


def stays_gated_when_dispatched(kind: object) -> bool:
    return isinstance(kind, StaysGatedWhenDispatched) and kind.stays_gated_when_dispatched


def names_remote_workloads(kind: object) -> NamesRemoteWorkloads | None:
    return kind if isinstance(kind, NamesRemoteWorkloads) else None

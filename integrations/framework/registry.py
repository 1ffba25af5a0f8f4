"""The job kinds a manager can queue, by upstream's framework name, and which are on.

`integrations.registry.KINDS` lists every kind fleetq implements (one line per kind);
`FrameworkRegistry` answers the generic machinery's lookups: the kinds a Configuration's
`integrations.frameworks` enables (upstream's names; a name upstream knows but fleetq
does not implement is reported, an unknown name is an error), and the kind of an owner
reference. `UPSTREAM_FRAMEWORKS` is upstream v0.19's list of integration names.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from integrations.framework.job_capabilities import (
    implied_frameworks,
    is_child_of_every_kind,
    is_webhook_only,
)
from integrations.framework.job_kind import JobKind

UPSTREAM_FRAMEWORKS = frozenset(
    {
        "batch/job",
        "jobset.x-k8s.io/jobset",
        "kubeflow.org/mpijob",
        "kubeflow.org/paddlejob",
        "kubeflow.org/pytorchjob",
        "kubeflow.org/tfjob",
        "kubeflow.org/xgboostjob",
        "kubeflow.org/jaxjob",
        "trainer.kubeflow.org/trainjob",
        "ray.io/rayjob",
        "ray.io/raycluster",
        "ray.io/rayservice",
        "workload.codeflare.dev/appwrapper",
        "sparkoperator.k8s.io/sparkapplication",
        "pod",
        "deployment",
        "statefulset",
        "leaderworkerset.x-k8s.io/leaderworkerset",
    }
)
"""Every integration name upstream Kueue accepts in `integrations.frameworks`."""

DEFAULT_FRAMEWORKS: tuple[str, ...] = ("batch/job",)
"""Upstream's default when `integrations.frameworks` is not set."""


class UnknownFramework(ValueError):
    """A framework name upstream Kueue does not know either."""


@dataclass(frozen=True)
class FrameworkRegistry:
    """Registered kinds by framework name (see module docstring)."""

    kinds: tuple[JobKind, ...]
    _by_name: dict[str, JobKind] = field(init=False, repr=False)
    _by_owner: dict[tuple[str, str], JobKind] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        by_name: dict[str, JobKind] = {}
        by_owner: dict[tuple[str, str], JobKind] = {}
        for kind in self.kinds:
            if kind.framework in by_name:
                raise ValueError(f"framework {kind.framework} is registered twice")
            if kind.framework not in UPSTREAM_FRAMEWORKS:
                raise ValueError(f"{kind.framework} is not an upstream framework name")
            by_name[kind.framework] = kind
            by_owner[kind.resource.gvk] = kind
        object.__setattr__(self, "_by_name", by_name)
        object.__setattr__(self, "_by_owner", by_owner)

    def __iter__(self) -> Iterator[JobKind]:
        return iter(self.kinds)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(kind.framework for kind in self.kinds)

    @property
    def queued_as_a_whole(self) -> frozenset[tuple[str, str]]:
        """(API group, kind) of the kinds here whose children are kinds here too (a
        JobSet and its Jobs): a child of one is queued with it, never on its own. With a
        kind here that every kind creates (`ChildOfEveryKind`: Pods), every other kind
        here that is queued itself (not `WebhookOnly`) is such an owner."""
        here = {(kind.resource.group, kind.resource.kind) for kind in self.kinds}
        owners = {
            (kind.resource.group, kind.resource.kind)
            for kind in self.kinds
            if any(child in here for child in kind.child_kinds)
        }
        if any(is_child_of_every_kind(kind) for kind in self.kinds):
            owners |= {
                (kind.resource.group, kind.resource.kind)
                for kind in self.kinds
                if not is_child_of_every_kind(kind) and not is_webhook_only(kind)
            }
        return frozenset(owners)

    def get(self, framework: str) -> JobKind | None:
        return self._by_name.get(framework)

    def for_owner(self, api_version: str, kind: str) -> JobKind | None:
        """The registered kind an ownerReference of (apiVersion, kind) points at."""
        return self._by_owner.get((api_version, kind))

    def unsupported(self, frameworks: Iterable[str]) -> list[str]:
        """Upstream names in `frameworks` that fleetq does not implement (sorted).

        Raises UnknownFramework for names upstream does not know either."""
        names = list(frameworks)
        unknown = sorted(set(names) - UPSTREAM_FRAMEWORKS)
        if unknown:
            raise UnknownFramework(
                f"unknown framework(s) {', '.join(unknown)}; "
                f"known: {', '.join(sorted(UPSTREAM_FRAMEWORKS))}"
            )
        return sorted(set(names) - set(self._by_name))

    def enabled(self, frameworks: Iterable[str]) -> FrameworkRegistry:
        """The registered kinds `frameworks` names, and those they imply
        (`ImpliesFrameworks`), in registry order."""
        wanted = set(frameworks)
        for kind in self.kinds:
            if kind.framework in wanted:
                wanted.update(implied_frameworks(kind))
        return FrameworkRegistry(tuple(kind for kind in self.kinds if kind.framework in wanted))

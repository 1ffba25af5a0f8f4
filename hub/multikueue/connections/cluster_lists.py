"""ClusterLists: the clusters each MultiKueue check stands for, from MultiKueueConfigs and
MultiKueueClusterSets alike, and notice when that list changes.

Dispatch (through the registry) and the admission-check controller both ask it, so a
config and a set are used the same way: same order, same missing-cluster reporting. A
set's membership is computed once and kept until a set or a cluster changes in a way that
can change it (a set respecified, a cluster entering or leaving its selection); status
updates of clusters never cost a recomputation. Listeners hear the reference of a list
whose clusters changed; they must be quick (enqueue, no I/O).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from core.api.multikueue import MULTIKUEUE_CONFIG_KIND, MultiKueueCluster, MultiKueueConfig
from core.api.multikueue_cluster_set import MULTIKUEUE_CLUSTER_SET_KIND, MultiKueueClusterSet
from core.kube.informer import EventHandlers, Informer
from hub.multikueue.connections.cluster_list_reference import ClusterListRef
from hub.multikueue.connections.cluster_set_members import (
    selected_by,
    set_members,
    set_problem,
)

ListListener = Callable[[ClusterListRef], None]


@dataclass(frozen=True, slots=True)
class Resolution:
    """A list's clusters in dispatch order, or why it has none to give (`problem`)."""

    clusters: tuple[str, ...] = ()
    problem: str | None = None


class ClusterLists:
    """Resolves configs and sets to cluster names from the caches (see module docstring)."""

    def __init__(
        self,
        configs: Informer[MultiKueueConfig],
        sets: Informer[MultiKueueClusterSet],
        clusters: Informer[MultiKueueCluster],
    ) -> None:
        self._configs = configs
        self._sets = sets
        self._clusters = clusters
        self._resolved: dict[str, Resolution] = {}
        self._listeners: list[ListListener] = []
        configs.add_handlers(
            EventHandlers(
                on_add=self._config_changed,
                on_update=self._config_updated,
                on_delete=self._config_changed,
            )
        )
        sets.add_handlers(
            EventHandlers(
                on_add=self._set_changed,
                on_update=self._set_updated,
                on_delete=self._set_changed,
            )
        )
        clusters.add_handlers(
            EventHandlers(
                on_add=lambda cluster: self._membership_may_change(None, cluster),
                on_update=self._membership_may_change,
                on_delete=lambda cluster: self._membership_may_change(cluster, None),
            )
        )

    def subscribe(self, listener: ListListener) -> None:
        self._listeners.append(listener)

    def resolve(self, ref: ClusterListRef) -> Resolution | None:
        """The list's clusters; None when no such config or set exists."""
        if ref.kind == MULTIKUEUE_CONFIG_KIND:
            config = self._configs.store.get(ref.name)
            return None if config is None else Resolution(tuple(config.spec.clusters))
        if ref.kind != MULTIKUEUE_CLUSTER_SET_KIND:
            return None
        cluster_set = self._sets.store.get(ref.name)
        if cluster_set is None:
            return None
        resolved = self._resolved.get(ref.name)
        if resolved is None:
            problem = set_problem(cluster_set)
            resolved = (
                Resolution(problem=problem)
                if problem is not None
                else Resolution(set_members(cluster_set, self._clusters.store))
            )
            self._resolved[ref.name] = resolved
        return resolved

    def clusters_of(self, ref: ClusterListRef) -> tuple[str, ...]:
        resolved = self.resolve(ref)
        return () if resolved is None else resolved.clusters

    def lists_holding(self, cluster: str) -> list[ClusterListRef]:
        """Every config and set that has `cluster` among its clusters."""
        refs = [
            ClusterListRef(MULTIKUEUE_CONFIG_KIND, config.metadata.name)
            for config in self._configs.store
            if cluster in config.spec.clusters
        ]
        for cluster_set in self._sets.store:
            ref = ClusterListRef(MULTIKUEUE_CLUSTER_SET_KIND, cluster_set.metadata.name)
            if cluster in self.clusters_of(ref):
                refs.append(ref)
        return refs

    # -- event handlers --------------------------------------------------------------

    def _publish(self, ref: ClusterListRef) -> None:
        for listener in list(self._listeners):
            listener(ref)

    def _config_changed(self, config: MultiKueueConfig) -> None:
        self._publish(ClusterListRef(MULTIKUEUE_CONFIG_KIND, config.metadata.name))

    def _config_updated(self, old: MultiKueueConfig, new: MultiKueueConfig) -> None:
        if old.spec.clusters != new.spec.clusters:
            self._config_changed(new)

    def _set_changed(self, cluster_set: MultiKueueClusterSet) -> None:
        self._resolved.pop(cluster_set.metadata.name, None)
        self._publish(ClusterListRef(MULTIKUEUE_CLUSTER_SET_KIND, cluster_set.metadata.name))

    def _set_updated(self, old: MultiKueueClusterSet, new: MultiKueueClusterSet) -> None:
        if old.spec != new.spec:
            self._set_changed(new)

    def _membership_may_change(
        self, old: MultiKueueCluster | None, new: MultiKueueCluster | None
    ) -> None:
        """A cluster came, went or changed: tell the sets it entered or left through their
        selector (a listed name is a member whether or not its cluster exists). O(sets)."""
        for cluster_set in self._sets.store:
            was = old is not None and selected_by(cluster_set, old)
            now = new is not None and selected_by(cluster_set, new)
            if was != now:
                self._set_changed(cluster_set)

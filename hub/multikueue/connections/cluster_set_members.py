"""Which MultiKueueClusters a MultiKueueClusterSet holds, and why a set can hold none.

Pure functions over cached objects. Members are the listed names in the set's order
(whether or not such a cluster exists yet: a missing one is reported as upstream reports
a missing cluster of a config), then every existing cluster the selector matches that is
not listed, sorted by name, so the order (which `ConfigOrder` placement and ties follow)
is stable across restarts and list orders.
"""

from __future__ import annotations

from collections.abc import Iterable

from core.adapters.kueue_manifests import label_selector
from core.api.codec import to_builtins
from core.api.multikueue import MultiKueueCluster
from core.api.multikueue_cluster_set import MultiKueueClusterSet
from core.api.validation import validate
from core.engine.node_matching import label_selector_matches


def set_problem(cluster_set: MultiKueueClusterSet) -> str | None:
    """Why the set cannot be used as it is (an invalid selector, an empty name), or None."""
    errors = validate(cluster_set)
    return "; ".join(str(error) for error in errors) if errors else None


def set_members(
    cluster_set: MultiKueueClusterSet, clusters: Iterable[MultiKueueCluster]
) -> tuple[str, ...]:
    """The set's cluster names in dispatch order (see module docstring); assumes a valid set."""
    selected = sorted(
        cluster.metadata.name for cluster in clusters if selected_by(cluster_set, cluster)
    )
    return (*cluster_set.spec.clusters, *selected)


def selected_by(cluster_set: MultiKueueClusterSet, cluster: MultiKueueCluster) -> bool:
    """Whether the set holds `cluster` through its selector (a listed one is held anyway)."""
    if cluster_set.spec.cluster_selector is None:
        return False
    if cluster.metadata.name in cluster_set.spec.clusters:
        return False
    selector = label_selector(to_builtins(cluster_set.spec.cluster_selector))
    return label_selector_matches(selector, cluster.metadata.labels)


def empty_set_message(name: str) -> str:
    return (
        f'MultiKueueClusterSet "{name}" has no clusters: it lists none and its '
        "clusterSelector matches no MultiKueueCluster"
    )

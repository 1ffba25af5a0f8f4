"""Pointing a RayCluster spec's pod templates at an admission, and putting them back.

Every Ray kind starts the same way: each group's pod template (head, then worker groups)
gets its pod set's admitted flavors, podSetUpdates and Kueue's pod labels merged in; a
stop restores each template's scheduling fields to what the Workload recorded. Groups
are matched to pod sets by name. The admission must name exactly the cluster's groups
(plus any extra pod set the kind itself owns, e.g. a RayJob's submitter), else starting
fails: upstream refuses a pod set count that does not match too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from integrations.framework.pod_set_info import (
    InvalidPodSetInfo,
    PodSetInfo,
    merge_into_template,
    restore_template,
)
from integrations.ray import ray_fields as fields


def _groups(cluster: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(pod set name, the dict holding `template`) for the head and each worker group."""
    head = cluster.setdefault("headGroupSpec", {})
    out = [(fields.HEAD_POD_SET, head)]
    for group in cluster.get("workerGroupSpecs") or ():
        if isinstance(group, dict):
            out.append((fields.group_pod_set_name(group), group))
    return out


def group_names(cluster: fields.ClusterSpec) -> list[str]:
    groups = fields.worker_groups(cluster)
    return [fields.HEAD_POD_SET, *(fields.group_pod_set_name(g) for g in groups)]


def check_names(
    cluster: fields.ClusterSpec, infos: Iterable[str], extra: Iterable[str] = ()
) -> None:
    """Raise InvalidPodSetInfo unless the admission's pod sets are the cluster's groups."""
    wanted = sorted([*group_names(cluster), *extra])
    have = sorted(infos)
    if wanted != have:
        raise InvalidPodSetInfo(f"the admission has pod sets {have}, the Ray cluster has {wanted}")


def start_cluster(cluster: dict[str, Any], infos: Mapping[str, PodSetInfo]) -> None:
    """Merge each group's admission into its template, in place (names checked before)."""
    for name, holder in _groups(cluster):
        holder["template"] = merge_into_template(holder.get("template") or {}, infos[name])


def restore_cluster(cluster: dict[str, Any], recorded: Mapping[str, Mapping[str, Any]]) -> None:
    """Put each group's template back to the one recorded under its name, in place.

    The caller first checks that the record is this job's (upstream skips a restore
    whose pod set count does not match)."""
    for name, holder in _groups(cluster):
        if name in recorded:
            holder["template"] = restore_template(holder.get("template") or {}, recorded[name])

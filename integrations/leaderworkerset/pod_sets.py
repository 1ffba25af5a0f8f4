"""One group's pod sets, in upstream's names and order: `leader` (1 Pod, from the leader
template) then `worker` (`size - 1`), or `main` (`size`) without a leader template.

The templates are copied without the LWS controller's own `leaderworkerset.sigs.k8s.io/`
labels and annotations (but its name label), with duplicate env variables folded. A
topology request on a template is read as for any kind; the workers' pod index is their
worker-index label.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.api.workload import PodSet
from integrations.framework.env_deduplication import fold_duplicate_env
from integrations.framework.job_metadata import Job
from integrations.framework.topology_request import topology_request_from_template
from integrations.leaderworkerset import lws_fields as fields

LEADER_POD_SET = "leader"
WORKER_POD_SET = "worker"
MAIN_POD_SET = "main"
"""Upstream's default pod set name: the workers' when there is no leader template."""


def _without_lws_keys(values: Any) -> dict[str, Any]:
    return {
        key: value
        for key, value in (values or {}).items()
        if not key.startswith(fields.LABEL_PREFIX) or key == fields.SET_NAME_LABEL
    }


def _template(template: Mapping[str, Any]) -> dict[str, Any]:
    copied = fold_duplicate_env(template)
    meta = dict(copied.get("metadata") or {})
    for key in ("labels", "annotations"):
        if key in meta:
            meta[key] = _without_lws_keys(meta[key])
    if meta or "metadata" in copied:
        copied["metadata"] = meta
    return copied


def _pod_set(name: str, count: int, template: Mapping[str, Any], index_label: str | None) -> PodSet:
    copied = _template(template)
    return PodSet(
        name=name,
        template=copied,
        count=count,
        topology_request=topology_request_from_template(copied, pod_index_label=index_label),
    )


def lws_pod_sets(lws: Job) -> list[PodSet]:
    """The pod sets of each of the LeaderWorkerSet's groups (see module docstring)."""
    size = fields.size(lws)
    leader = fields.leader_template(lws)
    worker = fields.worker_template(lws)
    if leader is None:
        return [_pod_set(MAIN_POD_SET, size, worker, fields.WORKER_INDEX_LABEL)]
    return [
        _pod_set(LEADER_POD_SET, 1, leader, None),
        _pod_set(WORKER_POD_SET, size - 1, worker, fields.WORKER_INDEX_LABEL),
    ]

"""Reading a LeaderWorkerSet kept as a plain dict, with its CRD's defaults, and the names
its controller writes on the Pods and StatefulSets it makes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from integrations.framework.job_metadata import (
    Job,
    int_value,
    parse_int,
    section,
    spec,
    status,
)

GROUP: Final = "leaderworkerset.x-k8s.io"
VERSION: Final = "v1"
KIND: Final = "LeaderWorkerSet"
PLURAL: Final = "leaderworkersets"

LABEL_PREFIX: Final = "leaderworkerset.sigs.k8s.io"
SET_NAME_LABEL: Final = f"{LABEL_PREFIX}/name"
"""On every Pod and StatefulSet of a LeaderWorkerSet: its name."""
GROUP_INDEX_LABEL: Final = f"{LABEL_PREFIX}/group-index"
WORKER_INDEX_LABEL: Final = f"{LABEL_PREFIX}/worker-index"
LEADER_NAME_ANNOTATION: Final = f"{LABEL_PREFIX}/leader-name"
"""On a worker Pod only: its leader's name (what tells a worker from a leader)."""

DEFAULT_REPLICAS: Final = 1
DEFAULT_SIZE: Final = 1
MAX_REPLICAS: Final = 1_000_000
"""Upstream's sanity bound: one Workload per group, so no unbounded creation."""


def leader_worker_template(lws: Job) -> Mapping[str, Any]:
    return section(spec(lws), "leaderWorkerTemplate")


def replicas(lws: Job) -> int:
    value = int_value(spec(lws).get("replicas"))
    return DEFAULT_REPLICAS if value is None else value


def size(lws: Job) -> int:
    value = int_value(leader_worker_template(lws).get("size"))
    return DEFAULT_SIZE if value is None else value


def leader_template(lws: Job) -> Mapping[str, Any] | None:
    template = leader_worker_template(lws).get("leaderTemplate")
    return template if isinstance(template, Mapping) else None


def worker_template(lws: Job) -> Mapping[str, Any]:
    return section(leader_worker_template(lws), "workerTemplate")


def status_replicas(lws: Job) -> int:
    return int_value(status(lws).get("replicas")) or 0


def updated_replicas(lws: Job) -> int:
    return int_value(status(lws).get("updatedReplicas")) or 0


def max_surge(lws: Job) -> int:
    """The rolling update's maxSurge as upstream Kueue reads it (`IntValue`: a number, or
    a string that is one; a percentage counts as 0)."""
    rolling = section(section(spec(lws), "rolloutStrategy"), "rollingUpdateConfiguration")
    value = rolling.get("maxSurge")
    if isinstance(value, str):
        return parse_int(value) or 0
    return int_value(value) or 0

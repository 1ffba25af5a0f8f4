"""The worker ClusterQueues' quota and usage, as the local engine holds them.

The agent runs the same engine as the hub, so the figures come straight from it: the
quota from each ClusterQueue manifest (through the same adapter the engine is fed by),
reserved quota and pending/admitted counts from `Engine.cluster_queue_status`. They are
exactly what the next local admission will be decided against, including workloads that
reserved quota a moment ago and whose status write is still in flight, which counting
admitted Workloads' `status.admission` from a cache would miss.

A ClusterQueue the engine does not hold (its manifest was rejected) is left out: nothing
can be admitted to it, so the hub must not count on it.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec
import structlog

from core.adapters.kueue_manifests import ManifestError, cluster_queue_from_manifest
from core.api.json_types import Json
from core.engine.engine import Engine
from core.engine.model import ClusterQueue
from core.kube.object_meta import name_of, resource_version_of
from worker_agent.capacity.queue_figures import ClusterQueueFigures

_REJECTED = (ManifestError, ValueError, KeyError, TypeError, msgspec.MsgspecError)


class EngineQueueFigures:
    """Figures of the cached ClusterQueues; manifests are translated once per version."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.log = structlog.get_logger("worker_agent.queue_figures")
        self._specs: dict[str, tuple[str, ClusterQueue | None]] = {}

    def figures(self, cluster_queues: Iterable[Json]) -> list[ClusterQueueFigures]:
        out = []
        seen = set()
        for manifest in cluster_queues:
            name = name_of(manifest)
            seen.add(name)
            spec = self._spec(name, manifest)
            status = self.engine.cluster_queue_status(name)
            if spec is not None and status is not None:
                out.append(ClusterQueueFigures(spec=spec, status=status))
        for gone in self._specs.keys() - seen:
            del self._specs[gone]
        return out

    def _spec(self, name: str, manifest: Json) -> ClusterQueue | None:
        version = resource_version_of(manifest)
        cached = self._specs.get(name)
        if cached is not None and cached[0] == version:
            return cached[1]
        spec: ClusterQueue | None
        try:
            spec = cluster_queue_from_manifest(manifest)
        except _REJECTED as error:
            self.log.warning("agent.cluster_queue_skipped", cluster_queue=name, error=str(error))
            spec = None
        self._specs[name] = (version, spec)
        return spec

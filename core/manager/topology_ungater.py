"""The topology ungater: steers the pods of TAS-admitted Workloads into their domains.

Pods of a pod set admitted with a `topologyAssignment` are created with the
`kueue.x-k8s.io/topology` scheduling gate (the job kinds merge it into their templates at
start; the Pod webhook gates every queued Pod). This controller, as upstream's
`tas-topology-ungater`, gives each gated pod the node selector of its domain (the
domain's level labels, e.g. rack and hostname) and lifts the gate, so kube-scheduler
binds it inside the domain and every domain receives its assigned count
(`topology_ungate_plan`).

Guarantees:
- state is derived from the pods and the Workload only (gated or not, their node
  selectors): a restart or a repeated reconcile plans the same, already-ungated pods are
  counted, not moved;
- a pod ungated by this process is expected until the cache shows it ungated (or gone);
  until then its Workload is not planned again, so a stale cache cannot send two pods
  into one slot (upstream's expectations store);
- each patch is guarded by the pod's resourceVersion; a conflict or failure requeues
  the Workload with backoff;
- only the leader writes (`run` is leader work); the pod cache is warm on followers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any, Final

import structlog

from core.adapters.node_manifests import is_tas_pod
from core.api.json_types import Json
from core.kube.client import KubeClient, PatchType
from core.kube.errors import NotFound
from core.kube.informer import EventHandlers
from core.kube.object_meta import make_key, name_of, namespace_of, object_key, uid_of
from core.kube.object_store import ObjectStore
from core.kube.workqueue import WorkQueue
from core.manager import watched_kinds as kinds
from core.manager.field_manager import FIELD_MANAGER
from core.manager.topology_ungate_plan import (
    Ungate,
    admitted_by_tas,
    has_topology_gate,
    plan_ungates,
    ungate_patch,
)
from integrations.framework.labels import WORKLOAD_ANNOTATION

Store = ObjectStore[dict[str, Any]]

POD_BY_WORKLOAD: Final = "workload"
BATCH_SECONDS: Final = 0.2
"""Pod events within this window make one reconcile (upstream batches for a second)."""
EXPECTATION_RECHECK_SECONDS: Final = 0.5


def pod_workload_index(pod: Json) -> Iterable[str]:
    """Index pods by `namespace/workload` from the workload annotation Kueue sets on them."""
    workload = ((pod.get("metadata") or {}).get("annotations") or {}).get(WORKLOAD_ANNOTATION)
    return (make_key(namespace_of(pod), str(workload)),) if workload else ()


class TopologyUngater:
    """Lifts the topology gate of TAS pods, domain by domain (see module docstring)."""

    def __init__(self, client: KubeClient, *, workloads: Store, pods: Store) -> None:
        self.client = client
        self.workloads = workloads
        self.pods = pods
        self.queue: WorkQueue[str] = WorkQueue("topology-ungater")
        self.expected: dict[str, set[str]] = {}
        """Per Workload key: UIDs of pods ungated here and not yet seen ungated."""
        self.ungated = 0
        self.log = structlog.get_logger("core.manager.topology_ungater")

    # -- triggers ------------------------------------------------------------------------
    def workload_handlers(self) -> EventHandlers[dict[str, Any]]:
        def changed(obj: Json) -> None:
            if admitted_by_tas(obj):
                self.queue.add(object_key(obj))

        return EventHandlers(
            on_add=changed, on_update=lambda _old, new: changed(new), on_delete=self._forget
        )

    def pod_handlers(self) -> EventHandlers[dict[str, Any]]:
        return EventHandlers(
            on_add=lambda pod: self._pod_changed(pod, deleted=False),
            on_update=lambda _old, new: self._pod_changed(new, deleted=False),
            on_delete=lambda pod: self._pod_changed(pod, deleted=True),
        )

    def _forget(self, workload: Json) -> None:
        self.expected.pop(object_key(workload), None)

    def _pod_changed(self, pod: Json, *, deleted: bool) -> None:
        if not is_tas_pod(pod):
            return
        for key in pod_workload_index(pod):
            if deleted or not has_topology_gate(pod):
                pending = self.expected.get(key)
                if pending is not None:
                    pending.discard(uid_of(pod))
            self.queue.add_after(key, BATCH_SECONDS)

    # -- reconcile -----------------------------------------------------------------------
    async def run(self, workers: int = 4) -> None:
        for workload in self.workloads:
            if admitted_by_tas(workload):
                self.queue.add(object_key(workload))
        await self.queue.run_workers(self.reconcile, workers)

    def plan(self, key: str) -> list[Ungate] | None:
        """What to ungate for a Workload now; None while earlier ungates are unobserved."""
        if self.expected.get(key):
            return None
        self.expected.pop(key, None)
        workload = self.workloads.get(key)
        if workload is None:
            return []
        return plan_ungates(workload, self.pods.by_index(POD_BY_WORKLOAD, key))

    async def reconcile(self, key: str) -> None:
        planned = self.plan(key)
        if planned is None:
            self.queue.add_after(key, EXPECTATION_RECHECK_SECONDS)
            return
        if not planned:
            return
        self.expected[key] = {uid_of(u.pod) for u in planned}
        results = await asyncio.gather(
            *(self._ungate(key, u) for u in planned), return_exceptions=True
        )
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            raise errors[0]

    async def _ungate(self, key: str, ungate: Ungate) -> None:
        pod = ungate.pod
        try:
            await self.client.patch(
                kinds.PODS,
                name_of(pod),
                ungate_patch(pod, ungate.node_selector),
                patch_type=PatchType.MERGE,
                namespace=namespace_of(pod),
                field_manager=FIELD_MANAGER,
            )
        except NotFound:
            self._not_expected(key, pod)  # gone: its replacement comes gated
            return
        except BaseException:
            self._not_expected(key, pod)  # a Conflict: the reconcile is retried on the newer pod
            raise
        self.ungated += 1
        self.log.info(
            "pod.topology_ungated",
            workload=key,
            pod=name_of(pod),
            node_selector=ungate.node_selector,
        )

    def _not_expected(self, key: str, pod: Json) -> None:
        pending = self.expected.get(key)
        if pending is not None:
            pending.discard(uid_of(pod))

"""Failed-node handling for TAS workloads, as upstream v0.19.2's TAS node controller and
scheduler second pass do it.

A node named in an admitted workload's topology assignment fails (deleted, no Ready
condition, or NotReady / tainted NoSchedule-NoExecute once the workload's pods on it have
stopped; `tas_node_health`):
1. the node goes into the Workload's `status.unhealthyNodes`; a workload that already
   lists another failed node is evicted instead (reason `NodeFailures`, "Workload
   eviction triggered due to multiple TAS assigned node failures, including: a, b");
2. the engine moves the failed node's pods to a replacement domain
   (`Engine.replace_failed_node`) and the status writer stores the new
   `topologyAssignment`; with no fit the workload is evicted ("Workload was evicted as
   there was no replacement for unhealthy node(s): n"), as with upstream's
   TASFailedNodeReplacementFailFast;
3. once the assignment no longer names it, the node leaves `unhealthyNodes` (so does
   every node of an evicted or finished workload, and a node that recovered); the
   topology ungater then steers the replacement pods to their new domain.
Pods pinned to a failing node but never bound there are marked Failed (condition
`TerminatedByKueue`, reason `UnschedulableOnAssignedNode`) so their job replaces them.

Every step reads the current Node, Workload and pods from the caches and writes only a
difference, guarded by resourceVersion; a restart redoes what is left. Only the leader
writes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any, Final

import structlog

from core.adapters.node_manifests import node_is_ready
from core.adapters.topology_encoding import TopologyAssignmentError, decode
from core.api.json_types import Json
from core.api.workload_conditions import WorkloadReason
from core.engine.topology_replacement import assigned_nodes
from core.kube.client import KubeClient, PatchType
from core.kube.errors import NotFound
from core.kube.informer import EventHandlers
from core.kube.object_meta import name_of, namespace_of, object_key, resource_version_of
from core.kube.object_store import ObjectStore
from core.kube.workqueue import WorkQueue
from core.manager import watched_kinds as kinds
from core.manager.engine_host import EngineHost
from core.manager.field_manager import FIELD_MANAGER
from core.manager.tas_node_health import (
    NodeVerdict,
    failing_taints,
    pod_set_tolerations,
    stranded_pods,
    verdict,
)
from core.manager.topology_ungate_plan import unhealthy_nodes
from core.manager.topology_ungater import POD_BY_WORKLOAD
from core.manager.workload_decisions import condition_true

Store = ObjectStore[dict[str, Any]]

WORKLOAD_BY_ASSIGNED_NODE: Final = "tasAssignedNode"
MULTIPLE_FAILURES: Final = (
    "Workload eviction triggered due to multiple TAS assigned node failures, including: {}"
)
TERMINATED_CONDITION: Final = {
    "type": "TerminatedByKueue",
    "status": "True",
    "reason": "UnschedulableOnAssignedNode",
    "message": "Pod terminated by Kueue NodeController due to node taint",
}


def workload_nodes(workload: Json) -> set[str]:
    """Nodes the Workload's topology assignments name (hostname-level ones)."""
    out: set[str] = set()
    admission = (workload.get("status") or {}).get("admission") or {}
    for psa in admission.get("podSetAssignments") or ():
        encoded = psa.get("topologyAssignment") if isinstance(psa, Mapping) else None
        if not encoded:
            continue
        try:
            out |= assigned_nodes(decode(encoded))
        except TopologyAssignmentError:
            continue
    return out


def workload_assigned_node_index(workload: Json) -> Iterable[str]:
    """Index admitted Workloads by the nodes their topology assignments name."""
    status = workload.get("status") or {}
    if not condition_true(status, "QuotaReserved"):
        return ()
    return sorted(workload_nodes(workload))


def _running(workload: Json) -> bool:
    status = workload.get("status") or {}
    return (
        condition_true(status, "Admitted")
        and not condition_true(status, "Evicted")
        and not condition_true(status, "Finished")
    )


class NodeFailureController:
    """Detects failed nodes of TAS workloads and has their pods moved (module docstring)."""

    def __init__(
        self,
        client: KubeClient,
        host: EngineHost,
        *,
        nodes: Store,
        workloads: Store,
        pods: Store,
        resource_flavors: Store,
    ) -> None:
        self.client = client
        self.host = host
        self.nodes = nodes
        self.workloads = workloads
        self.pods = pods
        self.resource_flavors = resource_flavors
        self.node_queue: WorkQueue[str] = WorkQueue("tas-node-failure")
        self.workload_queue: WorkQueue[str] = WorkQueue("tas-node-replacement")
        self.log = structlog.get_logger("core.manager.tas_node_failure")

    # -- triggers ------------------------------------------------------------------------
    def node_handlers(self) -> EventHandlers[dict[str, Any]]:
        def updated(old: Json, new: Json) -> None:
            if _health_inputs(old) != _health_inputs(new):
                self.node_queue.add(name_of(new))

        return EventHandlers(
            on_add=lambda node: self.node_queue.add(name_of(node)),
            on_update=updated,
            on_delete=lambda node: self.node_queue.add(name_of(node)),
        )

    def workload_handlers(self) -> EventHandlers[dict[str, Any]]:
        def changed(workload: Json) -> None:
            if unhealthy_nodes(workload):
                self.workload_queue.add(object_key(workload))

        return EventHandlers(on_add=changed, on_update=lambda _old, new: changed(new))

    def pod_handlers(self) -> EventHandlers[dict[str, Any]]:
        """A pod on a node leaving (or finishing) may be what a failing node waits for."""

        def changed(pod: Json) -> None:
            node = (pod.get("spec") or {}).get("nodeName") or (
                (pod.get("spec") or {}).get("nodeSelector") or {}
            ).get("kubernetes.io/hostname")
            if node and not self._looks_healthy(str(node)):
                self.node_queue.add(str(node))

        return EventHandlers(
            on_add=changed, on_update=lambda _old, new: changed(new), on_delete=changed
        )

    def _looks_healthy(self, node_name: str) -> bool:
        """Ready and without scheduling taints: no pod event there can fail it."""
        node = self.nodes.get(node_name)
        return node is not None and node_is_ready(node) and not failing_taints(node, [])

    # -- running -------------------------------------------------------------------------
    async def run(self, workers: int = 2) -> None:
        for workload in self.workloads:
            for node in workload_assigned_node_index(workload):
                self.node_queue.add(node)
            if unhealthy_nodes(workload):
                self.workload_queue.add(object_key(workload))
        async with asyncio.TaskGroup() as group:
            group.create_task(self.node_queue.run_workers(self.reconcile_node, workers))
            group.create_task(self.workload_queue.run_workers(self.reconcile_workload, workers))

    # -- detection -----------------------------------------------------------------------
    def _tolerations_of(self, workload: Json) -> list[Any]:
        admission = (workload.get("status") or {}).get("admission") or {}
        templates = [
            ps.get("template") or {} for ps in (workload.get("spec") or {}).get("podSets") or ()
        ]
        extra: list[Json] = []
        for psa in admission.get("podSetAssignments") or ():
            for flavor_name in set((psa.get("flavors") or {}).values()):
                flavor = self.resource_flavors.get(str(flavor_name)) or {}
                extra.extend((flavor.get("spec") or {}).get("tolerations") or ())
        for check in (workload.get("status") or {}).get("admissionChecks") or ():
            for update in check.get("podSetUpdates") or ():
                extra.extend(update.get("tolerations") or ())
        return pod_set_tolerations(templates, extra)

    async def reconcile_node(self, node_name: str) -> None:
        node = self.nodes.get(node_name)
        for workload in self.workloads.by_index(WORKLOAD_BY_ASSIGNED_NODE, node_name):
            if not _running(workload):
                continue
            key = object_key(workload)
            pods = [
                p
                for p in self.pods.by_index(POD_BY_WORKLOAD, key)
                if (p.get("spec") or {}).get("nodeName") == node_name
            ]
            listed = unhealthy_nodes(workload)
            if verdict(node, self._tolerations_of(workload), pods) is NodeVerdict.HEALTHY:
                if node_name in listed:
                    await self._set_unhealthy(workload, listed - {node_name})
                continue
            if node is not None:
                await self._fail_stranded(node_name, self.pods.by_index(POD_BY_WORKLOAD, key))
            if node_name in listed:
                continue
            if listed:
                names = ", ".join([*sorted(listed), node_name])
                self.log.info("workload.evicted_node_failures", workload=key, nodes=names)
                self.host.evict(key, WorkloadReason.NODE_FAILURES, MULTIPLE_FAILURES.format(names))
                continue
            self.log.info("workload.node_failed", workload=key, node=node_name)
            await self._set_unhealthy(workload, {node_name})

    async def _fail_stranded(self, node_name: str, pods: Iterable[Json]) -> None:
        for pod in stranded_pods(node_name, pods):
            conditions = [
                c
                for c in (pod.get("status") or {}).get("conditions") or ()
                if c.get("type") != TERMINATED_CONDITION["type"]
            ]
            try:
                await self.client.patch(
                    kinds.PODS,
                    name_of(pod),
                    {
                        "metadata": {"resourceVersion": resource_version_of(pod)},
                        "status": {
                            "phase": "Failed",
                            "conditions": [*conditions, TERMINATED_CONDITION],
                        },
                    },
                    patch_type=PatchType.MERGE,
                    namespace=namespace_of(pod),
                    subresource="status",
                    field_manager=FIELD_MANAGER,
                )
            except NotFound:
                continue
            self.log.info("pod.terminated_on_failed_node", pod=object_key(pod), node=node_name)

    async def _set_unhealthy(self, workload: Json, names: set[str]) -> None:
        try:
            await self.client.patch(
                kinds.WORKLOADS,
                name_of(workload),
                {
                    "metadata": {"resourceVersion": resource_version_of(workload)},
                    "status": {"unhealthyNodes": [{"name": n} for n in sorted(names)] or None},
                },
                patch_type=PatchType.MERGE,
                namespace=namespace_of(workload),
                subresource="status",
                field_manager=FIELD_MANAGER,
            )
        except NotFound:
            return

    # -- replacement ---------------------------------------------------------------------
    async def reconcile_workload(self, key: str) -> None:
        workload = self.workloads.get(key)
        if workload is None:
            return
        listed = unhealthy_nodes(workload)
        if not listed:
            return
        if not _running(workload):
            await self._set_unhealthy(workload, set())  # upstream resets them on eviction
            return
        assigned = workload_nodes(workload)
        still = listed & assigned
        if still:
            # Upstream replaces the first listed node; a second failure evicts (above).
            self.host.replace_failed_node(key, sorted(still)[0])
            return
        await self._set_unhealthy(workload, set())


def _health_inputs(node: Json) -> tuple[Any, ...]:
    conditions = [
        (c.get("type"), c.get("status"))
        for c in (node.get("status") or {}).get("conditions") or ()
        if isinstance(c, Mapping) and c.get("type") == "Ready"
    ]
    return (conditions, (node.get("spec") or {}).get("taints"))

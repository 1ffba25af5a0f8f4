"""kueue.x-k8s.io/v1beta2 manifests (dicts, as parsed from YAML/JSON) <-> engine model.

Pure functions: the hub feeds informer objects through `from_manifest`, the scenario
runner feeds YAML documents, and both render engine statuses back with the
`*_status_to_dict` functions. Upstream defaults apply where a field is absent
(queueingStrategy BestEffortFIFO, whenCanBorrow MayStopSearch, whenCanPreempt
TryNextFlavor, preemption policies Never, podSet name `main`, active true, weight 1).
An AdmissionCheck without an `Active=True` condition is inactive (upstream's check cache).
A ClusterQueue without `namespaceSelector` selects no namespace, as upstream.
Two core kinds are read too, for the requests of pods that leave them out: a LimitRange's
Container- and Pod-type defaults and a node.k8s.io RuntimeClass's `overhead.podFixed`
(see `core.engine.resource_defaults`); a Workload's pod sets keep their templates'
resource parts for them.

Times: engine floats are seconds since the epoch; manifests carry RFC 3339 strings.
Numbers are accepted too (scenario shorthand: seconds).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from core.adapters.topology_encoding import TopologyAssignmentError
from core.adapters.topology_encoding import decode as decode_topology
from core.adapters.topology_encoding import encode as encode_topology
from core.api import concurrent_admission, kube_time
from core.api.admission_check import AdmissionCheckConditionType, CheckState
from core.api.cluster_queue import MigrationMode
from core.api.json_types import Json
from core.api.topology_assignment import DelayedTopologyRequestState
from core.api.workload_slices import replacement_for
from core.engine.model import (
    Admission,
    AdmissionCheck,
    AdmissionCheckRule,
    AdmissionCheckStatus,
    BorrowWithinCohort,
    ClusterQueue,
    ClusterQueuePreemption,
    ClusterQueueStatus,
    Cohort,
    CohortStatus,
    ConcurrentAdmission,
    Condition,
    FlavorFungibility,
    FlavorQuotas,
    FlavorResourceUsage,
    FungibilityPolicy,
    FungibilityPreference,
    LabelSelector,
    LocalQueue,
    LocalQueueStatus,
    Namespace,
    PodSetAssignment,
    PreemptionPolicy,
    QueueingStrategy,
    RequeueState,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    SelectorRequirement,
    SliceLayer,
    StopPolicy,
    Taint,
    TaintEffect,
    Toleration,
    Topology,
    TopologyRequest,
    Workload,
    WorkloadPriorityClass,
    WorkloadStatus,
    workload_key,
)
from core.engine.pod_templates import pod_set_from_template
from core.engine.quantity import format_quantity, parse_quantity, to_base_units
from core.engine.resource_defaults import LimitRange, RuntimeClass, resource_view

GROUP_VERSION = "kueue.x-k8s.io/v1beta2"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"


class ManifestError(ValueError):
    """A manifest the engine cannot use; the message names the object and the field."""


# ----------------------------------------------------------------------------- time


def parse_time(value: Any) -> float:
    if value is None or value == "":
        return 0.0
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, datetime):
        return value.timestamp()
    return kube_time.parse_time(str(value)).timestamp()


def format_time(value: float) -> str:
    return kube_time.format_time(datetime.fromtimestamp(value, UTC))


# ----------------------------------------------------------------------------- helpers


def _meta(obj: Json) -> Json:
    return obj.get("metadata") or {}


def _spec(obj: Json) -> Json:
    return obj.get("spec") or {}


def _name(obj: Json) -> str:
    name = _meta(obj).get("name")
    if not name:
        raise ManifestError(f"{obj.get('kind', 'object')} without metadata.name")
    return str(name)


def _weight(fair_sharing: Json | None) -> float:
    if not fair_sharing or fair_sharing.get("weight") is None:
        return 1.0
    return float(parse_quantity(fair_sharing["weight"]))


def label_selector(data: Json | None) -> LabelSelector | None:
    if data is None:
        return None
    return LabelSelector(
        match_labels=dict(data.get("matchLabels") or {}),
        match_expressions=tuple(
            SelectorRequirement(
                key=req.get("key", ""),
                operator=req.get("operator", "In"),
                values=tuple(str(v) for v in req.get("values") or ()),
            )
            for req in data.get("matchExpressions") or ()
        ),
    )


def tolerations_from(items: Any) -> tuple[Toleration, ...]:
    """Tolerations in JSON form (a pod spec's or a flavor's) in the engine's terms."""
    return tuple(
        Toleration(
            key=t.get("key", "") or "",
            operator=t.get("operator", "Equal") or "Equal",
            value=str(t.get("value", "") or ""),
            effect=t.get("effect", "") or "",
            toleration_seconds=t.get("tolerationSeconds"),
        )
        for t in items or ()
    )


def resource_groups(
    items: Any, *, owner: str, with_limits: bool = True
) -> tuple[ResourceGroup, ...]:
    groups = []
    for gi, group in enumerate(items or ()):
        covered = tuple(str(r) for r in group.get("coveredResources") or ())
        flavors = []
        for fi, flavor in enumerate(group.get("flavors") or ()):
            quotas = []
            for ri, rq in enumerate(flavor.get("resources") or ()):
                res = str(rq.get("name", ""))
                where = f"{owner} resourceGroups[{gi}].flavors[{fi}].resources[{ri}]"
                if not res:
                    raise ManifestError(f"{where}: resource name is required")
                try:
                    nominal = to_base_units(res, rq.get("nominalQuota", 0))
                    borrowing = rq.get("borrowingLimit")
                    lending = rq.get("lendingLimit")
                    quotas.append(
                        ResourceQuota(
                            name=res,
                            nominal=nominal,
                            borrowing_limit=(
                                to_base_units(res, borrowing) if borrowing is not None else None
                            ),
                            lending_limit=(
                                to_base_units(res, lending) if lending is not None else None
                            ),
                        )
                    )
                except ValueError as exc:
                    raise ManifestError(f"{where}: {exc}") from exc
            flavors.append(FlavorQuotas(name=str(flavor.get("name", "")), resources=tuple(quotas)))
        groups.append(ResourceGroup(covered_resources=covered, flavors=tuple(flavors)))
    return tuple(groups)


# ----------------------------------------------------------------------------- kinds


def resource_flavor_from_manifest(obj: Json) -> ResourceFlavor:
    spec = _spec(obj)
    taints = tuple(
        Taint(
            key=t.get("key", ""),
            value=str(t.get("value", "") or ""),
            effect=TaintEffect(t.get("effect", "NoSchedule")),
        )
        for t in spec.get("nodeTaints") or ()
    )
    return ResourceFlavor(
        name=_name(obj),
        node_labels=dict(spec.get("nodeLabels") or {}),
        node_taints=taints,
        tolerations=tolerations_from(spec.get("tolerations")),
        topology_name=spec.get("topologyName"),
    )


def cluster_queue_from_manifest(obj: Json) -> ClusterQueue:
    name = _name(obj)
    spec = _spec(obj)
    pre = spec.get("preemption") or {}
    bwc = pre.get("borrowWithinCohort") or {}
    ff = spec.get("flavorFungibility") or {}
    checks = (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or ()
    return ClusterQueue(
        name=name,
        resource_groups=resource_groups(spec.get("resourceGroups"), owner=f"ClusterQueue {name}"),
        cohort=spec.get("cohortName") or None,
        queueing_strategy=QueueingStrategy(spec.get("queueingStrategy") or "BestEffortFIFO"),
        namespace_selector=label_selector(spec.get("namespaceSelector")),
        preemption=ClusterQueuePreemption(
            within_cluster_queue=PreemptionPolicy(pre.get("withinClusterQueue") or "Never"),
            reclaim_within_cohort=PreemptionPolicy(pre.get("reclaimWithinCohort") or "Never"),
            borrow_within_cohort=BorrowWithinCohort(
                policy=PreemptionPolicy(bwc.get("policy") or "Never"),
                max_priority_threshold=bwc.get("maxPriorityThreshold"),
            ),
        ),
        flavor_fungibility=FlavorFungibility(
            when_can_borrow=FungibilityPolicy(ff.get("whenCanBorrow") or "MayStopSearch"),
            when_can_preempt=FungibilityPolicy(ff.get("whenCanPreempt") or "TryNextFlavor"),
            preference=FungibilityPreference(ff["preference"]) if ff.get("preference") else None,
        ),
        stop_policy=StopPolicy(spec.get("stopPolicy") or "None"),
        fair_sharing_weight=_weight(spec.get("fairSharing")),
        admission_checks=tuple(
            AdmissionCheckRule(
                name=str(rule.get("name", "")),
                on_flavors=tuple(str(f) for f in rule.get("onFlavors") or ()),
            )
            for rule in checks
        ),
        terminating=bool(_meta(obj).get("deletionTimestamp")),
        concurrent_admission=concurrent_admission_policy(spec),
    )


def cohort_from_manifest(obj: Json) -> Cohort:
    name = _name(obj)
    spec = _spec(obj)
    return Cohort(
        name=name,
        parent=spec.get("parentName") or None,
        resource_groups=resource_groups(spec.get("resourceGroups"), owner=f"Cohort {name}"),
        fair_sharing_weight=_weight(spec.get("fairSharing")),
    )


def local_queue_from_manifest(obj: Json) -> LocalQueue:
    meta = _meta(obj)
    spec = _spec(obj)
    return LocalQueue(
        namespace=str(meta.get("namespace") or "default"),
        name=_name(obj),
        cluster_queue=str(spec.get("clusterQueue", "")),
        stop_policy=StopPolicy(spec.get("stopPolicy") or "None"),
    )


def priority_class_from_manifest(obj: Json) -> WorkloadPriorityClass:
    return WorkloadPriorityClass(name=_name(obj), value=int(obj.get("value", 0)))


def admission_check_from_manifest(obj: Json) -> AdmissionCheck:
    """Active only once its controller says so, as upstream: no `Active` condition (no
    controller has looked at it yet) is inactive, and so is every queue that uses it."""
    active = False
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == AdmissionCheckConditionType.ACTIVE:
            active = cond.get("status") == "True"
    return AdmissionCheck(
        name=_name(obj), controller_name=str(_spec(obj).get("controllerName", "")), active=active
    )


def namespace_from_manifest(obj: Json) -> Namespace:
    return Namespace(name=_name(obj), labels=dict(_meta(obj).get("labels") or {}))


def _quantities(items: Any, owner: str) -> dict[str, Any]:
    """A resource list as written, each quantity checked to parse."""
    out: dict[str, Any] = {}
    for resource, quantity in (items or {}).items():
        try:
            to_base_units(str(resource), quantity)
        except ValueError as error:
            raise ManifestError(f"{owner}: {resource}: {error}") from None
        out[str(resource)] = quantity
    return out


def limit_range_from_manifest(obj: Json) -> LimitRange:
    """The defaults of a v1 LimitRange (its Container- and Pod-type items; the first item
    of a type to set a resource wins, as upstream's Summarize)."""
    meta = _meta(obj)
    name = _name(obj)
    owner = f"LimitRange {meta.get('namespace')}/{name}"
    found: dict[str, dict[str, Any]] = {
        "container_default": {},
        "container_default_request": {},
        "pod_default": {},
        "pod_default_request": {},
    }
    for item in _spec(obj).get("limits") or ():
        prefix = {"Container": "container", "Pod": "pod"}.get(str(item.get("type")))
        if prefix is None:
            continue
        for field_name, key in (("default", "default"), ("defaultRequest", "default_request")):
            merged = _quantities(item.get(field_name), f"{owner}: {field_name}")
            merged.update(found[f"{prefix}_{key}"])
            found[f"{prefix}_{key}"] = merged
    return LimitRange(namespace=str(meta.get("namespace") or "default"), name=name, **found)


def runtime_class_from_manifest(obj: Json) -> RuntimeClass:
    """A node.k8s.io/v1 RuntimeClass: the overhead pods of that class carry."""
    name = _name(obj)
    overhead = obj.get("overhead")
    pod_fixed = overhead.get("podFixed") if isinstance(overhead, Mapping) else None
    return RuntimeClass(
        name=name,
        overhead=None
        if pod_fixed is None
        else _quantities(pod_fixed, f"RuntimeClass {name}: overhead.podFixed"),
    )


def _variant_of(obj: Json, namespace: str) -> str | None:
    parent = concurrent_admission.parent_name(obj)
    return workload_key(namespace, parent) if parent is not None else None


def concurrent_admission_policy(spec: Json) -> ConcurrentAdmission | None:
    """spec.concurrentAdmissionPolicy; a mode the engine does not know is a ManifestError."""
    policy = spec.get("concurrentAdmissionPolicy")
    if not policy:
        return None
    migration = policy.get("migration") or {}
    mode = migration.get("mode") or MigrationMode.TRY_PREFERRED_FLAVORS.value
    try:
        parsed = MigrationMode(mode)
    except ValueError:
        raise ManifestError(
            f"spec.concurrentAdmissionPolicy.migration.mode: unknown mode {mode!r}"
        ) from None
    constraints = migration.get("constraints") or {}
    last = constraints.get("lastAcceptableFlavorName")
    return ConcurrentAdmission(mode=parsed, last_acceptable_flavor=str(last) if last else None)


def workload_from_manifest(
    obj: Json, priority_classes: Mapping[str, int] | None = None
) -> Workload:
    meta = _meta(obj)
    spec = _spec(obj)
    name = _name(obj)
    namespace = str(meta.get("namespace") or "default")
    pod_sets = []
    for ps in spec.get("podSets") or ():
        min_count = ps.get("minCount")
        template = ps.get("template") or {}
        pod_set = pod_set_from_template(
            name=str(ps.get("name") or "main"),
            count=int(ps.get("count", 1)),
            min_count=int(min_count) if min_count is not None else None,
            template=template,
        )
        view = resource_view(template.get("spec") or {})
        pod_sets.append(
            dataclasses.replace(
                pod_set,
                resources=view,
                topology_request=topology_request_from_dict(ps.get("topologyRequest")),
            )
        )
    if not pod_sets:
        raise ManifestError(f"Workload {namespace}/{name}: spec.podSets must not be empty")
    pc_ref = spec.get("priorityClassRef") or {}
    pc_name = pc_ref.get("name") or None
    priority = spec.get("priority")
    if priority is None and pc_name and priority_classes is not None:
        priority = priority_classes.get(pc_name)
    status_data = obj.get("status")
    reclaimable = {
        str(rp["name"]): int(rp.get("count", 0))
        for rp in (status_data or {}).get("reclaimablePods") or ()
    }
    max_exec = spec.get("maximumExecutionTimeSeconds")
    return Workload(
        namespace=namespace,
        name=name,
        uid=str(meta.get("uid") or f"{namespace}/{name}"),
        queue_name=str(spec.get("queueName", "")),
        pod_sets=tuple(pod_sets),
        priority=int(priority or 0),
        priority_class=pc_name,
        creation_time=parse_time(meta.get("creationTimestamp")),
        active=spec.get("active", True) is not False,
        maximum_execution_time_seconds=int(max_exec) if max_exec is not None else None,
        reclaimable_pods=reclaimable,
        job_uid=str((meta.get("labels") or {}).get(JOB_UID_LABEL, "")),
        replaces=replacement_for(obj),
        variant_of=_variant_of(obj, namespace),
        allowed_flavors=concurrent_admission.allowed_flavors(obj),
        status=workload_status_from_dict(status_data) if status_data else None,
    )


def topology_request_from_dict(data: Json | None) -> TopologyRequest | None:
    """`podSets[].topologyRequest`; the multi-layer constraints win over the legacy pair."""
    if not data:
        return None
    layers = tuple(
        SliceLayer(level=str(c.get("topology", "")), size=int(c.get("size", 0)))
        for c in data.get("podsetSliceRequiredTopologyConstraints") or ()
    )
    if not layers and data.get("podSetSliceRequiredTopology") is not None:
        size = data.get("podSetSliceSize")
        layers = (
            SliceLayer(
                level=str(data["podSetSliceRequiredTopology"]),
                size=int(size) if size is not None else 0,
            ),
        )
    unconstrained = data.get("unconstrained")
    return TopologyRequest(
        required=data.get("required"),
        preferred=data.get("preferred"),
        unconstrained=bool(unconstrained) if unconstrained is not None else None,
        slices=layers,
        group_name=data.get("podSetGroupName"),
    )


def topology_from_manifest(obj: Json) -> Topology:
    levels = tuple(str(level.get("nodeLabel", "")) for level in _spec(obj).get("levels") or ())
    return Topology(name=_name(obj), levels=levels)


def _pod_set_assignment(psa: Json) -> PodSetAssignment:
    topology = psa.get("topologyAssignment")
    delayed = psa.get("delayedTopologyRequest")
    try:
        assignment = decode_topology(topology) if topology else None
    except TopologyAssignmentError as err:
        raise ManifestError(f"podSetAssignments[{psa.get('name')}]: {err}") from err
    return PodSetAssignment(
        name=str(psa.get("name") or "main"),
        flavors=dict(psa.get("flavors") or {}),
        resource_usage={
            res: to_base_units(res, q) for res, q in (psa.get("resourceUsage") or {}).items()
        },
        count=int(psa.get("count", 1)),
        topology_assignment=assignment,
        delayed_topology_request=DelayedTopologyRequestState(delayed) if delayed else None,
    )


def workload_status_from_dict(data: Json) -> WorkloadStatus:
    conditions = tuple(
        Condition(
            type=str(c["type"]),
            status=c.get("status") == "True",
            reason=str(c.get("reason", "")),
            message=str(c.get("message", "")),
            last_transition_time=parse_time(c.get("lastTransitionTime")),
        )
        for c in data.get("conditions") or ()
    )
    admission = None
    if data.get("admission"):
        adm = data["admission"]
        admission = Admission(
            cluster_queue=str(adm.get("clusterQueue", "")),
            pod_set_assignments=tuple(
                _pod_set_assignment(psa) for psa in adm.get("podSetAssignments") or ()
            ),
        )
    requeue = None
    if data.get("requeueState"):
        rs = data["requeueState"]
        requeue = RequeueState(
            count=int(rs.get("count", 0) or 0),
            requeue_at=parse_time(rs["requeueAt"]) if rs.get("requeueAt") else None,
        )
    checks = tuple(
        AdmissionCheckStatus(
            name=str(c.get("name", "")),
            state=CheckState(c.get("state", CheckState.PENDING)),
            message=str(c.get("message", "")),
            last_transition_time=parse_time(c.get("lastTransitionTime")),
            retry_count=int(c.get("retryCount", 0) or 0),
            requeue_after_seconds=c.get("requeueAfterSeconds"),
            pod_set_updates=tuple(c.get("podSetUpdates") or ()),
        )
        for c in data.get("admissionChecks") or ()
    )
    evictions = {}
    for ev in (data.get("schedulingStats") or {}).get("evictions") or ():
        key = ev["reason"] + (f"/{ev['underlyingCause']}" if ev.get("underlyingCause") else "")
        evictions[key] = int(ev.get("count", 0))
    return WorkloadStatus(
        conditions=conditions,
        admission=admission,
        requeue_state=requeue,
        admission_checks=checks,
        reclaimable_pods={
            str(rp["name"]): int(rp.get("count", 0)) for rp in data.get("reclaimablePods") or ()
        },
        accumulated_past_execution_time_seconds=float(
            data.get("accumulatedPastExecutionTimeSeconds") or 0
        ),
        evictions=evictions,
    )


ModelObject = (
    ResourceFlavor
    | ClusterQueue
    | Cohort
    | LocalQueue
    | WorkloadPriorityClass
    | AdmissionCheck
    | Namespace
    | Topology
    | Workload
)


def from_manifest(obj: Json, priority_classes: Mapping[str, int] | None = None) -> ModelObject:
    """Translate any supported manifest by its `kind`."""
    kind = obj.get("kind")
    if kind == "ResourceFlavor":
        return resource_flavor_from_manifest(obj)
    if kind == "ClusterQueue":
        return cluster_queue_from_manifest(obj)
    if kind == "Cohort":
        return cohort_from_manifest(obj)
    if kind == "LocalQueue":
        return local_queue_from_manifest(obj)
    if kind == "WorkloadPriorityClass":
        return priority_class_from_manifest(obj)
    if kind == "AdmissionCheck":
        return admission_check_from_manifest(obj)
    if kind == "Namespace":
        return namespace_from_manifest(obj)
    if kind == "Topology":
        return topology_from_manifest(obj)
    if kind == "Workload":
        return workload_from_manifest(obj, priority_classes)
    raise ManifestError(f"unsupported kind {kind!r}")


# ----------------------------------------------------------------------------- status out


def condition_to_dict(cond: Condition) -> dict[str, Any]:
    return {
        "type": cond.type,
        "status": "True" if cond.status else "False",
        "reason": cond.reason,
        "message": cond.message,
        "lastTransitionTime": format_time(cond.last_transition_time),
    }


def _pod_set_assignment_to_dict(psa: PodSetAssignment) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": psa.name,
        "flavors": dict(psa.flavors),
        "resourceUsage": {
            res: format_quantity(res, val) for res, val in psa.resource_usage.items()
        },
        "count": psa.count,
    }
    if psa.topology_assignment is not None:
        out["topologyAssignment"] = encode_topology(psa.topology_assignment)
    if psa.delayed_topology_request is not None:
        out["delayedTopologyRequest"] = psa.delayed_topology_request.value
    return out


def admission_to_dict(admission: Admission) -> dict[str, Any]:
    return {
        "clusterQueue": admission.cluster_queue,
        "podSetAssignments": [
            _pod_set_assignment_to_dict(psa) for psa in admission.pod_set_assignments
        ],
    }


def workload_status_to_dict(status: WorkloadStatus) -> dict[str, Any]:
    out: dict[str, Any] = {"conditions": [condition_to_dict(c) for c in status.conditions]}
    if status.admission is not None:
        out["admission"] = admission_to_dict(status.admission)
    if status.requeue_state is not None:
        rs: dict[str, Any] = {"count": status.requeue_state.count}
        if status.requeue_state.requeue_at is not None:
            rs["requeueAt"] = format_time(status.requeue_state.requeue_at)
        out["requeueState"] = rs
    if status.admission_checks:
        checks = []
        for c in status.admission_checks:
            item: dict[str, Any] = {
                "name": c.name,
                "state": c.state.value,
                "message": c.message,
                "lastTransitionTime": format_time(c.last_transition_time),
            }
            if c.retry_count:
                item["retryCount"] = c.retry_count
            if c.requeue_after_seconds is not None:
                item["requeueAfterSeconds"] = int(c.requeue_after_seconds)
            if c.pod_set_updates:
                item["podSetUpdates"] = [dict(update) for update in c.pod_set_updates]
            checks.append(item)
        out["admissionChecks"] = checks
    if status.reclaimable_pods:
        out["reclaimablePods"] = [
            {"name": name, "count": count}
            for name, count in sorted(status.reclaimable_pods.items())
        ]
    if status.accumulated_past_execution_time_seconds:
        out["accumulatedPastExecutionTimeSeconds"] = int(
            status.accumulated_past_execution_time_seconds
        )
    if status.evictions:
        evictions = []
        for key, count in sorted(status.evictions.items()):
            reason, _, cause = key.partition("/")
            evictions.append({"reason": reason, "underlyingCause": cause, "count": count})
        out["schedulingStats"] = {"evictions": evictions}
    return out


def _flavor_usage(
    entries: tuple[FlavorResourceUsage, ...], with_borrowed: bool
) -> list[dict[str, Any]]:
    by_flavor: dict[str, list[dict[str, Any]]] = {}
    for e in entries:
        item: dict[str, Any] = {"name": e.resource, "total": format_quantity(e.resource, e.total)}
        if with_borrowed:
            item["borrowed"] = format_quantity(e.resource, e.borrowed)
        by_flavor.setdefault(e.flavor, []).append(item)
    return [{"name": flavor, "resources": res} for flavor, res in by_flavor.items()]


def cluster_queue_status_to_dict(status: ClusterQueueStatus) -> dict[str, Any]:
    return {
        "conditions": [condition_to_dict(c) for c in status.conditions],
        "flavorsReservation": _flavor_usage(status.flavors_reservation, True),
        "flavorsUsage": _flavor_usage(status.flavors_usage, True),
        "pendingWorkloads": status.pending_workloads,
        "reservingWorkloads": status.reserving_workloads,
        "admittedWorkloads": status.admitted_workloads,
        "fairSharing": {"weightedShare": status.weighted_share},
    }


def local_queue_status_to_dict(status: LocalQueueStatus) -> dict[str, Any]:
    return {
        "conditions": [condition_to_dict(c) for c in status.conditions],
        "flavorsReservation": _flavor_usage(status.flavors_reservation, False),
        "flavorsUsage": _flavor_usage(status.flavors_usage, False),
        "pendingWorkloads": status.pending_workloads,
        "reservingWorkloads": status.reserving_workloads,
        "admittedWorkloads": status.admitted_workloads,
    }


def cohort_status_to_dict(status: CohortStatus) -> dict[str, Any]:
    out: dict[str, Any] = {"fairSharing": {"weightedShare": status.weighted_share}}
    if status.conditions:
        out["conditions"] = [condition_to_dict(c) for c in status.conditions]
    return out

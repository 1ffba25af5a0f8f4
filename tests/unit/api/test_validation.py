"""Every validation rule: a valid object passes, a broken one fails naming field and fault."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from core.api.api_struct import ApiStruct
from core.api.codec import decode, decode_manifest
from core.api.validation import ErrorType, summary, validate, validate_update

MANIFESTS = Path(__file__).parent / "manifests"
TEMPLATE = {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}
NOW = "2025-03-01T10:00:00Z"


def manifest(name: str) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((MANIFESTS / f"{name}.yaml").read_text())
    return document


def obj(kind: str, **body: Any) -> ApiStruct:
    return decode(kind, {"metadata": {"name": "x"}, **body})


def cq(*groups: dict[str, Any], **spec: Any) -> ApiStruct:
    return obj("ClusterQueue", spec={"resourceGroups": list(groups), **spec})


def cohort(*groups: dict[str, Any], **spec: Any) -> ApiStruct:
    return obj("Cohort", spec={"resourceGroups": list(groups), **spec})


def group(resources: list[str], *flavors: dict[str, Any]) -> dict[str, Any]:
    return {"coveredResources": resources, "flavors": list(flavors)}


def flavor(name: str, *quotas: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "resources": list(quotas)}


def quota(resource: str, nominal: Any = "1", **limits: Any) -> dict[str, Any]:
    return {"name": resource, "nominalQuota": nominal, **limits}


def workload(
    *pod_sets: dict[str, Any], status: dict[str, Any] | None = None, **spec: Any
) -> ApiStruct:
    sets = [{"template": TEMPLATE, **ps} for ps in pod_sets]
    return obj("Workload", spec={"podSets": sets, **spec}, status=status or {})


def elastic_workload(count: int, *, reclaimable: int = 0, admitted_count: int = 4) -> ApiStruct:
    """An elastic job's reserved Workload (admitted with `admitted_count` pods)."""
    status: dict[str, Any] = {
        "conditions": reserved(),
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [
                {
                    "name": "main",
                    "flavors": {"cpu": "f"},
                    "resourceUsage": {"cpu": str(admitted_count)},
                    "count": admitted_count,
                }
            ],
        },
    }
    if reclaimable:
        status["reclaimablePods"] = [{"name": "main", "count": reclaimable}]
    return decode(
        "Workload",
        {
            "metadata": {"name": "x", "annotations": {"kueue.x-k8s.io/elastic-job": "true"}},
            "spec": {"podSets": [{"name": "main", "count": count, "template": TEMPLATE}]},
            "status": status,
        },
    )


def pod_resources(**resources: dict[str, Any]) -> dict[str, Any]:
    """A pod set whose one container has these requests/limits."""
    return {"template": {"spec": {"containers": [{"name": "c", "resources": resources}]}}}


def reserved(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    condition = {
        "type": "QuotaReserved",
        "status": "True",
        "reason": "QuotaReserved",
        "message": "",
        "lastTransitionTime": NOW,
    }
    return [condition, *extra]


def flavor_object(**spec: Any) -> ApiStruct:
    return obj("ResourceFlavor", spec=spec)


VALID: list[tuple[str, ApiStruct]] = [
    *(
        (f"manifest {path.stem}", decode_manifest(manifest(path.stem)))
        for path in sorted(MANIFESTS.glob("*.yaml"))
    ),
    (
        "cluster queue with limits in a cohort",
        cq(
            group(["cpu"], flavor("f", quota("cpu", "4", lendingLimit="4", borrowingLimit="0"))),
            cohortName="c",
        ),
    ),
    (
        "lendingLimit equal to nominalQuota in other units",
        cq(
            group(["memory"], flavor("f", quota("memory", "1Gi", lendingLimit="1024Mi"))),
            cohortName="c",
        ),
    ),
    (
        "cohort lending more than its own nominal quota",
        cohort(group(["cpu"], flavor("f", quota("cpu", "1", lendingLimit="5"))), parentName="root"),
    ),
    (
        "preference with both TryNextFlavor",
        cq(
            flavorFungibility={
                "whenCanBorrow": "TryNextFlavor",
                "preference": "BorrowingOverPreemption",
            }
        ),
    ),
    (
        "borrowWithinCohort with reclaim",
        cq(
            preemption={
                "reclaimWithinCohort": "Any",
                "borrowWithinCohort": {"policy": "LowerPriority"},
            }
        ),
    ),
    ("zero fair-sharing weight", cq(fairSharing={"weight": "0"})),
    (
        "workload with one minCount",
        workload({"name": "a", "count": 3, "minCount": 3}, {"name": "b"}),
    ),
    ("workload with 18 pod sets", workload(*({"name": f"p{i}"} for i in range(18)))),
    (
        "flavor with 8 taints",
        flavor_object(nodeTaints=[{"key": f"k{i}", "effect": "NoSchedule"} for i in range(8)]),
    ),
    (
        "same taint key with two effects",
        flavor_object(
            nodeTaints=[{"key": "k", "effect": "NoSchedule"}, {"key": "k", "effect": "NoExecute"}]
        ),
    ),
    ("match-all toleration", flavor_object(tolerations=[{"operator": "Exists"}])),
    (
        "multikueue config with 20 clusters",
        obj("MultiKueueConfig", spec={"clusters": [f"w{i}" for i in range(20)]}),
    ),
    (
        "multikueue cluster with a cluster profile",
        obj("MultiKueueCluster", spec={"clusterSource": {"clusterProfileRef": {"name": "p"}}}),
    ),
]


@pytest.mark.parametrize("value", [v for _, v in VALID], ids=[name for name, _ in VALID])
def test_valid_objects_pass(value: ApiStruct) -> None:
    assert validate(value) == [], summary(validate(value))


INVALID: list[tuple[str, ApiStruct, str, str]] = [
    # ClusterQueue and Cohort quota rules
    (
        "lendingLimit above nominalQuota",
        cq(group(["cpu"], flavor("f", quota("cpu", "2", lendingLimit="2001m"))), cohortName="c"),
        "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit",
        "must be less than or equal to nominalQuota",
    ),
    (
        "borrowingLimit without cohort",
        cq(group(["cpu"], flavor("f", quota("cpu", borrowingLimit="1")))),
        "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit",
        "may only be set when cohortName is set",
    ),
    (
        "lendingLimit without cohort",
        cq(group(["cpu"], flavor("f", quota("cpu", lendingLimit="1")))),
        "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit",
        "may only be set when cohortName is set",
    ),
    (
        "cohort limits without parent",
        cohort(group(["cpu"], flavor("f", quota("cpu", borrowingLimit="1")))),
        "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit",
        "may only be set when parentName is set",
    ),
    (
        "negative nominalQuota",
        cq(group(["cpu"], flavor("f", quota("cpu", "-1")))),
        "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",
        "must not be negative",
    ),
    (
        "negative borrowingLimit",
        cq(group(["cpu"], flavor("f", quota("cpu", borrowingLimit="-1"))), cohortName="c"),
        "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit",
        "must not be negative",
    ),
    (
        "malformed quantity",
        cq(group(["cpu"], flavor("f", quota("cpu", "lots")))),
        "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",
        "is not a quantity",
    ),
    (
        "flavor in two groups",
        cq(
            group(["cpu"], flavor("f", quota("cpu"))),
            group(["memory"], flavor("f", quota("memory"))),
        ),
        "spec.resourceGroups[1].flavors[0].name",
        "already appears in resourceGroups[0]",
    ),
    (
        "flavor twice in one group",
        cq(group(["cpu"], flavor("f", quota("cpu")), flavor("f", quota("cpu")))),
        "spec.resourceGroups[0].flavors[1]",
        "name='f' is already used at index 0",
    ),
    (
        "resource in two groups",
        cq(group(["cpu"], flavor("a", quota("cpu"))), group(["cpu"], flavor("b", quota("cpu")))),
        "spec.resourceGroups[1].coveredResources[0]",
        "already covered by resourceGroups[0]",
    ),
    (
        "flavor resources in another order",
        cq(group(["cpu", "memory"], flavor("f", quota("memory"), quota("cpu")))),
        "spec.resourceGroups[0].flavors[0].resources",
        "in that order",
    ),
    (
        "flavor missing a covered resource",
        cq(group(["cpu", "memory"], flavor("f", quota("cpu")))),
        "spec.resourceGroups[0].flavors[0].resources",
        "must list the group's coveredResources",
    ),
    (
        "invalid resource name",
        cq(group(["bad name"], flavor("f", quota("bad name")))),
        "spec.resourceGroups[0].coveredResources[0]",
        "must consist of alphanumerics",
    ),
    (
        "17 resource groups",
        cq(*(group([f"r{i}"], flavor(f"f{i}", quota(f"r{i}"))) for i in range(17))),
        "spec.resourceGroups",
        "must have at most 16 items",
    ),
    (
        "more than 256 flavors in total",
        cq(
            *(
                group([f"r{g}"], *(flavor(f"f{g}-{i}", quota(f"r{g}")) for i in range(33)))
                for g in range(8)
            )
        ),
        "spec.resourceGroups",
        "at most 256 flavors in total",
    ),
    (
        "group without flavors",
        cq(group(["cpu"])),
        "spec.resourceGroups[0].flavors",
        "must have at least 1 item",
    ),
    (
        "reclaim Never with borrowWithinCohort",
        cq(preemption={"borrowWithinCohort": {"policy": "LowerPriority"}}),
        "spec.preemption.borrowWithinCohort.policy",
        "must be Never when reclaimWithinCohort is Never",
    ),
    (
        "preference without TryNextFlavor",
        cq(flavorFungibility={"preference": "PreemptionOverBorrowing"}),
        "spec.flavorFungibility.preference",
        "requires whenCanBorrow and whenCanPreempt",
    ),
    (
        "negative fair-sharing weight",
        cq(fairSharing={"weight": "-1"}),
        "spec.fairSharing.weight",
        "must not be negative",
    ),
    (
        "tiny fair-sharing weight",
        cohort(fairSharing={"weight": "1n"}),
        "spec.fairSharing.weight",
        "must be above 1n",
    ),
    (
        "selector operator In without values",
        cq(namespaceSelector={"matchExpressions": [{"key": "team", "operator": "In"}]}),
        "spec.namespaceSelector.matchExpressions[0].values",
        "operator In needs values",
    ),
    (
        "unknown selector operator",
        cq(namespaceSelector={"matchExpressions": [{"key": "team", "operator": "Near"}]}),
        "spec.namespaceSelector.matchExpressions[0].operator",
        "'Near' is not one of",
    ),
    (
        "cohort name not a DNS subdomain",
        cq(cohortName="Team_A"),
        "spec.cohortName",
        "does not match",
    ),
    (
        "withinClusterQueue Any",
        cq(preemption={"withinClusterQueue": "Any"}),
        "spec.preemption.withinClusterQueue",
        "must be one of",
    ),
    # ResourceFlavor
    (
        "nine taints",
        flavor_object(nodeTaints=[{"key": f"k{i}", "effect": "NoSchedule"} for i in range(9)]),
        "spec.nodeTaints",
        "must have at most 8 items",
    ),
    (
        "duplicate taint",
        flavor_object(
            nodeTaints=[
                {"key": "k", "value": "a", "effect": "NoSchedule"},
                {"key": "k", "value": "b", "effect": "NoSchedule"},
            ]
        ),
        "spec.nodeTaints[1]",
        "taints must be unique by key and effect",
    ),
    (
        "unknown taint effect",
        flavor_object(nodeTaints=[{"key": "k", "effect": "Sometimes"}]),
        "spec.nodeTaints[0].effect",
        "'Sometimes' is not one of",
    ),
    (
        "nine node labels",
        flavor_object(nodeLabels={f"l{i}": "v" for i in range(9)}),
        "spec.nodeLabels",
        "must have at most 8 entries",
    ),
    (
        "invalid node label value",
        flavor_object(nodeLabels={"a": "not valid!"}),
        "spec.nodeLabels[a]",
        "value 'not valid!'",
    ),
    (
        "nine tolerations",
        flavor_object(tolerations=[{"key": f"k{i}", "operator": "Exists"} for i in range(9)]),
        "spec.tolerations",
        "must have at most 8 items",
    ),
    (
        "toleration without key using Equal",
        flavor_object(tolerations=[{"operator": "Equal"}]),
        "spec.tolerations[0].operator",
        "without key must use operator Exists",
    ),
    (
        "toleration Exists with a value",
        flavor_object(tolerations=[{"key": "k", "operator": "Exists", "value": "v"}]),
        "spec.tolerations[0].value",
        "must be empty when operator is Exists",
    ),
    (
        "tolerationSeconds without NoExecute",
        flavor_object(tolerations=[{"key": "k", "operator": "Exists", "tolerationSeconds": 5}]),
        "spec.tolerations[0].tolerationSeconds",
        "only be set when effect is NoExecute",
    ),
    (
        "unknown toleration operator",
        flavor_object(tolerations=[{"key": "k", "operator": "Like"}]),
        "spec.tolerations[0].operator",
        "'Like' is not one of",
    ),
    (
        "topology without node labels",
        flavor_object(topologyName="t"),
        "spec.nodeLabels",
        "at least one label is needed with topologyName",
    ),
    # Workload
    ("no pod sets", workload(), "spec.podSets", "at least one pod set is needed"),
    (
        "19 pod sets",
        workload(*({"name": f"p{i}"} for i in range(19))),
        "spec.podSets",
        "must have at most 18 items",
    ),
    (
        "duplicate pod set names",
        workload({"name": "a"}, {"name": "a"}),
        "spec.podSets[1]",
        "name='a' is already used at index 0",
    ),
    (
        "two pod sets with minCount",
        workload(
            {"name": "a", "count": 2, "minCount": 1}, {"name": "b", "count": 2, "minCount": 1}
        ),
        "spec.podSets",
        "at most one pod set may set minCount",
    ),
    (
        "minCount above count",
        workload({"count": 2, "minCount": 3}),
        "spec.podSets[0].minCount",
        "must not be greater than count",
    ),
    (
        "zero minCount",
        workload({"count": 2, "minCount": 0}),
        "spec.podSets[0].minCount",
        "must be greater than or equal to 1",
    ),
    (
        "negative count",
        workload({"count": -1}),
        "spec.podSets[0].count",
        "must be greater than or equal to 0",
    ),
    (
        "reserved pods resource",
        workload(
            {
                "template": {
                    "spec": {
                        "containers": [{"name": "c", "resources": {"requests": {"pods": "1"}}}]
                    }
                }
            }
        ),
        "spec.podSets[0].template.spec.containers[0].resources.requests[pods]",
        "reserved for Kueue",
    ),
    (
        "pod template spec that is not an object",
        workload({"template": {"spec": 42}}),
        "spec.podSets[0].template.spec",
        "Expected `object | null`, got `int`",
    ),
    (
        "pod template without containers",
        workload({"template": {"spec": {"nodeSelector": {"pool": "a"}}}}),
        "spec.podSets[0].template.spec.containers",
        "must be set",
    ),
    (
        "pod template whose containers are not a list",
        workload({"template": {"spec": {"containers": "hello"}}}),
        "spec.podSets[0].template.spec.containers",
        "Expected `array`, got `str`",
    ),
    (
        "container without a name",
        workload({"template": {"spec": {"containers": [{"image": "busybox"}]}}}),
        "spec.podSets[0].template.spec.containers[0].name",
        "must be set",
    ),
    (
        "request that is not a quantity",
        workload(pod_resources(requests={"cpu": "1.5.3"})),
        "spec.podSets[0].template.spec.containers[0].resources.requests[cpu]",
        "'1.5.3' is not a quantity",
    ),
    (
        "limit that is not a quantity",
        workload(pod_resources(limits={"memory": "12 bananas"})),
        "spec.podSets[0].template.spec.containers[0].resources.limits[memory]",
        "'12 bananas' is not a quantity",
    ),
    (
        "negative request",
        workload(pod_resources(requests={"cpu": "-2"})),
        "spec.podSets[0].template.spec.containers[0].resources.requests[cpu]",
        '"-2": must be greater than or equal to 0',
    ),
    (
        "negative limit of an init container",
        workload(
            {
                "template": {
                    "spec": {
                        "initContainers": [
                            {"name": "i", "resources": {"limits": {"memory": "-1Gi"}}}
                        ],
                        "containers": [{"name": "c"}],
                    }
                }
            }
        ),
        "spec.podSets[0].template.spec.initContainers[0].resources.limits[memory]",
        '"-1Gi": must be greater than or equal to 0',
    ),
    (
        "negative pod-level request",
        workload(
            {
                "template": {
                    "spec": {
                        "resources": {"requests": {"cpu": -1}},
                        "containers": [{"name": "c"}],
                    }
                }
            }
        ),
        "spec.podSets[0].template.spec.resources.requests[cpu]",
        '"-1": must be greater than or equal to 0',
    ),
    (
        "reserved pods resource in pod-level limits",
        workload(
            {
                "template": {
                    "spec": {"resources": {"limits": {"pods": "1"}}, "containers": [{"name": "c"}]}
                }
            }
        ),
        "spec.podSets[0].template.spec.resources.limits[pods]",
        "reserved for Kueue",
    ),
    (
        "priorityClassRef without priority",
        workload(
            {},
            priorityClassRef={
                "group": "kueue.x-k8s.io",
                "kind": "WorkloadPriorityClass",
                "name": "high",
            },
        ),
        "spec.priority",
        "must be set with priorityClassRef",
    ),
    (
        "priorityClassRef with a mismatched kind",
        workload(
            {},
            priority=1,
            priorityClassRef={
                "group": "scheduling.k8s.io",
                "kind": "WorkloadPriorityClass",
                "name": "high",
            },
        ),
        "spec.priorityClassRef.kind",
        "requires kind PriorityClass",
    ),
    (
        "clusterName with nominated clusters",
        workload({}, status={"clusterName": "w1", "nominatedClusterNames": ["w1"]}),
        "status.nominatedClusterNames",
        "must be empty once clusterName is set",
    ),
    (
        "admission for fewer pod sets than the spec",
        workload(
            {"name": "a"},
            {"name": "b"},
            status={
                "conditions": reserved(),
                "admission": {"clusterQueue": "q", "podSetAssignments": [{"name": "a"}]},
            },
        ),
        "status.admission.podSetAssignments",
        "needs one entry per spec.podSets entry",
    ),
    (
        "admission for an unknown pod set",
        workload(
            {"name": "a"},
            status={
                "conditions": reserved(),
                "admission": {"clusterQueue": "q", "podSetAssignments": [{"name": "b"}]},
            },
        ),
        "status.admission.podSetAssignments[0].name",
        "no pod set named 'b'",
    ),
    (
        "usage not divisible by count",
        workload(
            {"count": 3},
            status={
                "conditions": reserved(),
                "admission": {
                    "clusterQueue": "q",
                    "podSetAssignments": [
                        {"name": "main", "count": 3, "resourceUsage": {"cpu": "1"}}
                    ],
                },
            },
        ),
        "status.admission.podSetAssignments[0].resourceUsage[cpu]",
        "not a multiple of count",
    ),
    (
        "more reclaimable pods than pods",
        workload({"count": 2}, status={"reclaimablePods": [{"name": "main", "count": 3}]}),
        "status.reclaimablePods[0].count",
        "more than the pod set's count",
    ),
    (
        "pod set update for an unknown pod set",
        workload(
            {},
            status={
                "admissionChecks": [
                    {
                        "name": "c",
                        "state": "Ready",
                        "lastTransitionTime": NOW,
                        "message": "",
                        "podSetUpdates": [{"name": "other"}],
                    }
                ]
            },
        ),
        "status.admissionChecks[0].podSetUpdates[0].name",
        "no pod set named 'other'",
    ),
    # MultiKueue
    (
        "cluster with both sources",
        obj(
            "MultiKueueCluster",
            spec={
                "clusterSource": {
                    "kubeConfig": {"location": "s"},
                    "clusterProfileRef": {"name": "p"},
                }
            },
        ),
        "spec.clusterSource",
        "got kubeConfig and clusterProfileRef",
    ),
    (
        "cluster with no source",
        obj("MultiKueueCluster", spec={"clusterSource": {}}),
        "spec.clusterSource",
        "got neither",
    ),
    (
        "kubeConfig without location",
        obj("MultiKueueCluster", spec={"clusterSource": {"kubeConfig": {"location": ""}}}),
        "spec.clusterSource.kubeConfig.location",
        "must be set",
    ),
    (
        "config without clusters",
        obj("MultiKueueConfig", spec={"clusters": []}),
        "spec.clusters",
        "must have at least 1 item",
    ),
    (
        "config with 21 clusters",
        obj("MultiKueueConfig", spec={"clusters": [f"w{i}" for i in range(21)]}),
        "spec.clusters",
        "must have at most 20 items",
    ),
    (
        "config listing a cluster twice",
        obj("MultiKueueConfig", spec={"clusters": ["a", "b", "a"]}),
        "spec.clusters[2]",
        "'a' is listed twice",
    ),
    # Others
    (
        "admission check without controller",
        obj("AdmissionCheck", spec={"controllerName": ""}),
        "spec.controllerName",
        "must be set",
    ),
    (
        "priority class description too long",
        obj("WorkloadPriorityClass", value=1, description="x" * 2049),
        "description",
        "may not be longer than 2048",
    ),
    (
        "topology with hostname above another level",
        obj(
            "Topology",
            spec={
                "levels": [
                    {"nodeLabel": "kubernetes.io/hostname"},
                    {"nodeLabel": "example.com/rack"},
                ]
            },
        ),
        "spec.levels[0]",
        "may only be the lowest level",
    ),
    (
        "topology with a repeated level",
        obj(
            "Topology",
            spec={"levels": [{"nodeLabel": "example.com/rack"}, {"nodeLabel": "example.com/rack"}]},
        ),
        "spec.levels[1]",
        "is already level 0",
    ),
    (
        "condition with an invalid reason",
        obj(
            "ClusterQueue",
            status={
                "conditions": [
                    {
                        "type": "Active",
                        "status": "True",
                        "reason": "not valid",
                        "message": "",
                        "lastTransitionTime": NOW,
                    }
                ]
            },
        ),
        "status.conditions[0].reason",
        "does not match",
    ),
]


@pytest.mark.parametrize(
    ("value", "path", "message"),
    [pytest.param(v, p, m, id=name) for name, v, p, m in INVALID],
)
def test_invalid_objects_fail_with_path_and_reason(
    value: ApiStruct, path: str, message: str
) -> None:
    errors = validate(value)
    matching = [e for e in errors if e.path == path and message in e.message]
    assert matching, f"expected {path}: ...{message}... in:\n{summary(errors)}"


def test_error_text_names_path_type_and_detail() -> None:
    errors = validate(cq(group(["cpu"], flavor("f", quota("cpu", "-1")))))
    assert [str(e) for e in errors] == [
        "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: Invalid value:"
        " -1 must not be negative"
    ]
    assert errors[0].type is ErrorType.INVALID


UPDATES: list[tuple[str, ApiStruct, ApiStruct, str | None]] = [
    (
        "local queue keeps its cluster queue",
        obj("LocalQueue", spec={"clusterQueue": "a"}),
        obj("LocalQueue", spec={"clusterQueue": "a", "stopPolicy": "Hold"}),
        None,
    ),
    (
        "local queue moves to another cluster queue",
        obj("LocalQueue", spec={"clusterQueue": "a"}),
        obj("LocalQueue", spec={"clusterQueue": "b"}),
        "spec.clusterQueue: Invalid value: cannot be changed once set",
    ),
    (
        "admission check changes controller",
        obj("AdmissionCheck", spec={"controllerName": "a"}),
        obj("AdmissionCheck", spec={"controllerName": "b"}),
        "spec.controllerName: Invalid value: cannot be changed",
    ),
    (
        "topology levels change",
        obj("Topology", spec={"levels": [{"nodeLabel": "a"}]}),
        obj("Topology", spec={"levels": [{"nodeLabel": "b"}]}),
        "spec.levels: Invalid value: cannot be changed",
    ),
    (
        "flavor with topology changes labels",
        flavor_object(topologyName="t", nodeLabels={"a": "1"}),
        flavor_object(topologyName="t", nodeLabels={"a": "2"}),
        "spec.nodeLabels: Invalid value: cannot change while topologyName is set",
    ),
    (
        "flavor without topology changes labels",
        flavor_object(nodeLabels={"a": "1"}),
        flavor_object(nodeLabels={"a": "2"}),
        None,
    ),
    (
        "reserved workload changes pod sets",
        workload({"count": 1}, status={"conditions": reserved()}),
        workload({"count": 2}, status={"conditions": reserved()}),
        "spec.podSets: Invalid value: cannot change while quota is reserved",
    ),
    ("pending workload changes pod sets", workload({"count": 1}), workload({"count": 2}), None),
    (
        "reserved elastic workload is scaled down in place",
        elastic_workload(4),
        elastic_workload(1),
        None,
    ),
    (
        "reserved elastic workload may not grow in place",
        elastic_workload(2, admitted_count=2),
        elastic_workload(3, admitted_count=2),
        "spec.podSets: Invalid value: cannot change while quota is reserved",
    ),
    (
        "scaled-down elastic workload keeps a stale reclaimable count until it converges",
        elastic_workload(4, reclaimable=2),
        elastic_workload(1, reclaimable=2),
        None,
    ),
    (
        "scaled-down elastic workload's reclaimable count is re-derived lower",
        elastic_workload(1, reclaimable=2),
        elastic_workload(1),
        None,
    ),
    (
        "a reclaimable count of a workload not scaled down still may not drop",
        elastic_workload(4, reclaimable=2),
        elastic_workload(4, reclaimable=1),
        "status.reclaimablePods[main].count: Invalid value: cannot decrease below 2",
    ),
    (
        "reserved workload changes queue",
        workload({}, queueName="a", status={"conditions": reserved()}),
        workload({}, queueName="b", status={"conditions": reserved()}),
        "spec.queueName: Invalid value: cannot change while quota is reserved",
    ),
    (
        "reserved workload drops its priority class",
        workload(
            {},
            priority=1,
            priorityClassRef={
                "group": "kueue.x-k8s.io",
                "kind": "WorkloadPriorityClass",
                "name": "a",
            },
            status={"conditions": reserved()},
        ),
        workload({}, priority=1, status={"conditions": reserved()}),
        "spec.priorityClassRef: Invalid value: cannot be added or removed while quota is reserved",
    ),
    (
        "reserved workload switches workload priority class",
        workload(
            {},
            priority=1,
            priorityClassRef={
                "group": "kueue.x-k8s.io",
                "kind": "WorkloadPriorityClass",
                "name": "a",
            },
            status={"conditions": reserved()},
        ),
        workload(
            {},
            priority=2,
            priorityClassRef={
                "group": "kueue.x-k8s.io",
                "kind": "WorkloadPriorityClass",
                "name": "b",
            },
            status={"conditions": reserved()},
        ),
        None,
    ),
    (
        "admission is rewritten",
        workload({}, status={"admission": {"clusterQueue": "a", "podSetAssignments": []}}),
        workload({}, status={"admission": {"clusterQueue": "b", "podSetAssignments": []}}),
        "status.admission: Invalid value: cannot change once set",
    ),
    (
        "admission is cleared",
        workload({}, status={"admission": {"clusterQueue": "a", "podSetAssignments": []}}),
        workload({}),
        None,
    ),
    (
        "clusterName from the nominated clusters",
        workload({}, status={"nominatedClusterNames": ["w1", "w2"]}),
        workload({}, status={"clusterName": "w2"}),
        None,
    ),
    (
        "clusterName not nominated",
        workload({}, status={"nominatedClusterNames": ["w1"]}),
        workload({}, status={"clusterName": "w3"}),
        "status.clusterName: Invalid value: 'w3' must be one of the nominatedClusterNames",
    ),
    (
        "clusterName changes",
        workload({}, status={"clusterName": "w1"}),
        workload({}, status={"clusterName": "w2"}),
        "status.clusterName: Invalid value: cannot change once set",
    ),
    (
        "reclaimable pods decrease while reserved",
        workload(
            {"count": 3},
            status={"conditions": reserved(), "reclaimablePods": [{"name": "main", "count": 2}]},
        ),
        workload(
            {"count": 3},
            status={"conditions": reserved(), "reclaimablePods": [{"name": "main", "count": 1}]},
        ),
        "status.reclaimablePods[main].count: Invalid value: cannot decrease below 2",
    ),
    (
        "a status written on a Workload stored before its template became invalid",
        workload(pod_resources(requests={"cpu": "-2"}), {"name": "b", "template": {"spec": 1}}),
        workload(
            pod_resources(requests={"cpu": "-2"}),
            {"name": "b", "template": {"spec": 1}},
            status={"nominatedClusterNames": ["w1"]},
        ),
        None,
    ),
    (
        "a template changed to a negative request",
        workload(pod_resources(requests={"cpu": "2"})),
        workload(pod_resources(requests={"cpu": "-2"})),
        "spec.podSets[0].template.spec.containers[0].resources.requests[cpu]: Invalid value:"
        ' "-2": must be greater than or equal to 0',
    ),
    (
        "a template changed to one without containers",
        workload({}),
        workload({"template": {"spec": {}}}),
        "spec.podSets[0].template.spec.containers: Required value",
    ),
]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [pytest.param(o, n, e, id=name) for name, o, n, e in UPDATES],
)
def test_update_rules(old: ApiStruct, new: ApiStruct, expected: str | None) -> None:
    errors = [str(error) for error in validate_update(old, new)]
    if expected is None:
        assert errors == []
    else:
        assert any(error.startswith(expected) for error in errors), errors


def test_update_of_a_different_kind_is_a_programming_error() -> None:
    with pytest.raises(TypeError):
        validate_update(obj("Cohort"), obj("ClusterQueue"))

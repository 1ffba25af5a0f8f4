"""fleetq's generated CRDs on real apiservers.

(a) every kind round-trips through the apiserver with the server applying the same
    defaults as the Python types, and status is writable through the status subresource;
(b) invalid objects are rejected by the apiserver itself with a clear message (and by the
    Python validators too);
(c) upstream Kueue's own example manifests apply unchanged;
(d) every property upstream's v1beta2 CRDs define exists in ours with the same type.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from core.api.codec import decode
from core.api.registry import BY_KIND, KINDS, KindInfo
from core.api.validation import validate, validate_update
from devfleet.cluster_access import RunningFleet
from devfleet.toolchain import KUEUE_VERSIONS

pytestmark = pytest.mark.integration

UPSTREAM_VERSIONS = KUEUE_VERSIONS
"""Upstream releases whose schemas and examples fleetq must accept: the ones the interop
tests run (v0.19.2, the yardstick, and v0.17.0)."""
NOW = datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _suffix() -> str:
    return uuid.uuid4().hex[:8]


class Objects:
    """Objects a test creates on one cluster; deleted afterwards."""

    def __init__(self, rest: Any, namespace: str) -> None:
        self.rest = rest
        self.namespace = namespace
        self.created: list[str] = []

    def path(self, manifest: dict[str, Any]) -> str:
        info = BY_KIND[manifest["kind"]]
        namespace = manifest["metadata"].get("namespace") if info.namespaced else None
        return info.path(namespace, manifest["metadata"]["name"])

    def apply(self, manifest: dict[str, Any]) -> dict[str, Any]:
        info = BY_KIND[manifest["kind"]]
        if info.namespaced:
            manifest["metadata"]["namespace"] = self.namespace
        path = self.path(manifest)
        result = self.rest.apply(path, manifest)
        self.created.append(path)
        return result

    def create(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """Plain create (POST). Server-side apply answers duplicate list keys with a 500
        before validation runs, so rejections are checked through create."""
        info = BY_KIND[manifest["kind"]]
        if info.namespaced:
            manifest["metadata"]["namespace"] = self.namespace
        result = self.rest.request("POST", info.path(self.namespace), manifest)
        self.created.append(self.path(manifest))
        return result

    def cleanup(self) -> None:
        for path in reversed(self.created):
            self.rest.delete(path)


@pytest.fixture
def objects(
    kueue_crds: RunningFleet, kube_rest: dict[str, Any], namespace: str
) -> Iterator[Objects]:
    made = Objects(kube_rest[kueue_crds.manager.name], namespace)
    yield made
    made.cleanup()


def sample(kind: str) -> dict[str, Any]:
    """A small valid object of each kind, named uniquely, relying on server defaults."""
    name = f"sample-{kind.lower()}-{_suffix()}"
    meta = {"name": name}
    specs: dict[str, dict[str, Any]] = {
        "ResourceFlavor": {"spec": {"nodeLabels": {"gpu": "a100"}}},
        "ClusterQueue": {
            "spec": {
                "cohortName": "research",
                "namespaceSelector": {},
                "fairSharing": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory"],
                        "flavors": [
                            {
                                "name": "default",
                                "resources": [
                                    {"name": "cpu", "nominalQuota": 8, "lendingLimit": "2"},
                                    {"name": "memory", "nominalQuota": "32Gi"},
                                ],
                            }
                        ],
                    }
                ],
            }
        },
        "LocalQueue": {"spec": {"clusterQueue": "team-a", "fairSharing": {}}},
        "Cohort": {"spec": {"parentName": "root", "fairSharing": {}}},
        "Workload": {
            "spec": {
                "queueName": "team-a",
                "podSets": [
                    {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}
                ],
            }
        },
        "WorkloadPriorityClass": {"value": 100, "description": "high"},
        "AdmissionCheck": {"spec": {"controllerName": "kueue.x-k8s.io/multikueue"}},
        "MultiKueueCluster": {
            "spec": {"clusterSource": {"kubeConfig": {"location": "worker-1-secret"}}}
        },
        "MultiKueueConfig": {"spec": {"clusters": ["worker-1", "worker-2"]}},
        "Topology": {"spec": {"levels": [{"nodeLabel": "example.com/rack"}]}},
        "WorkerCapacity": {
            "spec": {"clusterName": "worker-1"},
        },
        "MultiKueueClusterSet": {
            "spec": {"clusters": ["worker-1"], "clusterSelector": {"matchLabels": {"pool": "a"}}}
        },
    }
    info = BY_KIND[kind]
    return {"apiVersion": info.api_version, "kind": kind, "metadata": meta, **specs[kind]}


STATUS_PATCHES: dict[str, dict[str, Any]] = {
    "ClusterQueue": {"pendingWorkloads": 3, "admittedWorkloads": 1},
    "LocalQueue": {"pendingWorkloads": 2},
    "Cohort": {"fairSharing": {"weightedShare": 5}},
    "Workload": {"nominatedClusterNames": ["worker-1"]},
    "AdmissionCheck": {},
    "MultiKueueCluster": {},
    "WorkerCapacity": {
        "observedTime": NOW,
        "flavors": [
            {
                "name": "gpu",
                "allocatable": {"nvidia.com/gpu": 8},
                "free": {"nvidia.com/gpu": "4"},
                "largestFreeBlocks": [{"nvidia.com/gpu": "4", "cpu": "16"}],
            }
        ],
        "clusterQueues": [{"name": "team-a", "pendingWorkloads": 1}],
    },
}

EXPECTED_DEFAULTS: dict[str, dict[str, Any]] = {
    "ClusterQueue": {
        "queueingStrategy": "BestEffortFIFO",
        "stopPolicy": "None",
        "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
        "preemption": {
            "reclaimWithinCohort": "Never",
            "withinClusterQueue": "Never",
            "borrowWithinCohort": {"policy": "Never"},
        },
        "fairSharing": {"weight": 1},
    },
    "LocalQueue": {"stopPolicy": "None", "fairSharing": {"weight": 1}},
    "Cohort": {"fairSharing": {"weight": 1}},
    "Workload": {"active": True},
    "MultiKueueCluster": {"clusterSource": {"kubeConfig": {"locationType": "Secret"}}},
}


def _contains(actual: Any, expected: Any) -> bool:
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            key in actual and _contains(actual[key], value) for key, value in expected.items()
        )
    return bool(actual == expected)


@pytest.mark.parametrize("info", KINDS, ids=lambda info: info.kind)
def test_crd_is_established_on_every_cluster(
    info: KindInfo, kueue_crds: RunningFleet, kube_rest: dict[str, Any]
) -> None:
    for member in kueue_crds.all:
        crd = kube_rest[member.name].get(
            f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{info.crd_name}"
        )
        names = crd["status"]["acceptedNames"]
        assert names["kind"] == info.kind
        assert names.get("shortNames", []) == list(info.short_names)
        assert names.get("categories", []) == list(info.categories)


@pytest.mark.parametrize("info", KINDS, ids=lambda info: info.kind)
def test_object_round_trips_with_server_defaults(info: KindInfo, objects: Objects) -> None:
    manifest = sample(info.kind)
    assert validate(decode(info.kind, manifest)) == []
    stored = objects.apply(copy.deepcopy(manifest))
    read_back = objects.rest.get(objects.path(stored))
    spec_key = "spec" if "spec" in read_back else None
    if info.kind in EXPECTED_DEFAULTS:
        assert spec_key is not None
        assert _contains(read_back["spec"], EXPECTED_DEFAULTS[info.kind]), read_back["spec"]
    if info.kind == "Workload":
        pod_set = read_back["spec"]["podSets"][0]
        assert (pod_set["name"], pod_set["count"]) == ("main", 1)
    # The server fills in exactly the defaults the Python types assume.
    ours = decode(info.kind, manifest)
    theirs = decode(info.kind, read_back)
    for attribute in ("spec", "value", "description"):
        if hasattr(ours, attribute):
            assert getattr(theirs, attribute) == getattr(ours, attribute), attribute


@pytest.mark.parametrize(
    "info", [info for info in KINDS if info.status_subresource], ids=lambda info: info.kind
)
def test_status_subresource_is_patchable(info: KindInfo, objects: Objects) -> None:
    stored = objects.apply(sample(info.kind))
    path = objects.path(stored)
    condition = {
        "type": "Active",
        "status": "True",
        "reason": "Ready",
        "message": "set by test",
        "lastTransitionTime": NOW,
    }
    status = dict(STATUS_PATCHES[info.kind])
    if info.kind != "Cohort":
        status["conditions"] = [condition]
    patched = objects.rest.request(
        "PATCH",
        path + "/status",
        {"status": status},
        content_type="application/merge-patch+json",
    )
    assert _contains(patched["status"], status), patched["status"]
    decoded = decode(info.kind, objects.rest.get(path))
    assert validate(decoded) == []
    # A status write through the main resource is ignored.
    objects.rest.request(
        "PATCH",
        path,
        {"status": {"conditions": []}},
        content_type="application/merge-patch+json",
    )
    assert _contains(objects.rest.get(path)["status"], status)


def _cq(resource_groups: list[Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": f"bad-{_suffix()}"},
        "spec": {"resourceGroups": resource_groups, **spec},
    }


def _group(resources: list[str], *flavors: dict[str, Any]) -> dict[str, Any]:
    return {"coveredResources": resources, "flavors": list(flavors)}


def _flavor(name: str, **quotas: Any) -> dict[str, Any]:
    resources = []
    for resource, quota in quotas.items():
        entry = {"name": resource, "nominalQuota": "1"}
        entry.update(quota if isinstance(quota, dict) else {"nominalQuota": quota})
        resources.append(entry)
    return {"name": name, "resources": resources}


def _manifest(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    info = BY_KIND[kind]
    return {
        "apiVersion": info.api_version,
        "kind": kind,
        "metadata": {"name": f"bad-{_suffix()}"},
        **body,
    }


def _workload(*pod_sets: dict[str, Any], **spec: Any) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    return _manifest(
        "Workload",
        {"spec": {"podSets": [{"template": template, **ps} for ps in pod_sets], **spec}},
    )


def _requests(**resources: dict[str, Any]) -> dict[str, Any]:
    """A pod set whose one container has these requests/limits."""
    return {"template": {"spec": {"containers": [{"name": "c", "resources": resources}]}}}


REJECTED: list[tuple[str, dict[str, Any], str]] = [
    (
        "lendingLimit above nominalQuota",
        _cq(
            [_group(["cpu"], _flavor("f", cpu={"nominalQuota": "2", "lendingLimit": "3"}))],
            cohortName="c",
        ),
        "lendingLimit must be less than or equal to nominalQuota",
    ),
    (
        "a flavor in two resource groups",
        _cq([_group(["cpu"], _flavor("f", cpu="1")), _group(["memory"], _flavor("f", memory="1"))]),
        "a flavor may appear in only one resource group",
    ),
    (
        "a flavor twice in one group",
        _cq([_group(["cpu"], _flavor("f", cpu="1"), _flavor("f", cpu="2"))]),
        "Duplicate value",
    ),
    (
        "a resource covered by two groups",
        _cq([_group(["cpu"], _flavor("a", cpu="1")), _group(["cpu"], _flavor("b", cpu="1"))]),
        "a resource may be covered by only one resource group",
    ),
    (
        "borrowingLimit without a cohort",
        _cq([_group(["cpu"], _flavor("f", cpu={"borrowingLimit": "1"}))]),
        "borrowingLimit may only be set when cohortName is set",
    ),
    (
        "lendingLimit without a cohort",
        _cq([_group(["cpu"], _flavor("f", cpu={"lendingLimit": "1"}))]),
        "lendingLimit may only be set when cohortName is set",
    ),
    (
        "negative nominalQuota",
        _cq([_group(["cpu"], _flavor("f", cpu="-1"))]),
        "nominalQuota must not be negative",
    ),
    (
        "flavor resources out of order",
        _cq([_group(["cpu", "memory"], _flavor("f", memory="1", cpu="1"))]),
        "each flavor must list exactly the group's coveredResources, in the same order",
    ),
    (
        "more than 16 resource groups",
        _cq([_group([f"r{i}"], _flavor(f"f{i}", **{f"r{i}": "1"})) for i in range(17)]),
        "must have at most 16 items",
    ),
    (
        "borrowWithinCohort while reclaimWithinCohort is Never",
        _cq(
            [],
            preemption={
                "reclaimWithinCohort": "Never",
                "borrowWithinCohort": {"policy": "LowerPriority"},
            },
        ),
        "borrowWithinCohort.policy must be Never when reclaimWithinCohort is Never",
    ),
    (
        "fungibility preference without TryNextFlavor",
        _cq([], flavorFungibility={"preference": "PreemptionOverBorrowing"}),
        "preference may only be set when whenCanBorrow and whenCanPreempt are both TryNextFlavor",
    ),
    (
        "cohort limits without a parent",
        _manifest(
            "Cohort",
            {
                "spec": {
                    "resourceGroups": [_group(["cpu"], _flavor("f", cpu={"lendingLimit": "1"}))]
                }
            },
        ),
        "lendingLimit may only be set when parentName is set",
    ),
    (
        "more than 8 taints",
        _manifest(
            "ResourceFlavor",
            {"spec": {"nodeTaints": [{"key": f"k{i}", "effect": "NoSchedule"} for i in range(9)]}},
        ),
        "must have at most 8 items",
    ),
    (
        "duplicate taints",
        _manifest(
            "ResourceFlavor",
            {
                "spec": {
                    "nodeTaints": [
                        {"key": "spot", "value": "a", "effect": "NoSchedule"},
                        {"key": "spot", "value": "b", "effect": "NoSchedule"},
                    ]
                }
            },
        ),
        "taints must be unique by key and effect",
    ),
    (
        "more than 8 node labels",
        _manifest("ResourceFlavor", {"spec": {"nodeLabels": {f"l{i}": "v" for i in range(9)}}}),
        "must have at most 8 items",
    ),
    (
        "toleration without key and with operator Equal",
        _manifest("ResourceFlavor", {"spec": {"tolerations": [{"operator": "Equal"}]}}),
        "a toleration without key must use operator Exists",
    ),
    (
        "MultiKueueCluster with both sources",
        _manifest(
            "MultiKueueCluster",
            {
                "spec": {
                    "clusterSource": {
                        "kubeConfig": {"location": "s"},
                        "clusterProfileRef": {"name": "p"},
                    }
                }
            },
        ),
        "exactly one of kubeConfig and clusterProfileRef must be set",
    ),
    (
        "MultiKueueCluster with no source",
        _manifest("MultiKueueCluster", {"spec": {"clusterSource": {}}}),
        "exactly one of kubeConfig and clusterProfileRef must be set",
    ),
    (
        "MultiKueueConfig with 21 clusters",
        _manifest("MultiKueueConfig", {"spec": {"clusters": [f"w{i}" for i in range(21)]}}),
        "must have at most 20 items",
    ),
    (
        "MultiKueueConfig listing a cluster twice",
        _manifest("MultiKueueConfig", {"spec": {"clusters": ["w1", "w1"]}}),
        "Duplicate value",
    ),
    (
        "MultiKueueConfig without clusters",
        _manifest("MultiKueueConfig", {"spec": {"clusters": []}}),
        "should have at least 1 items",
    ),
    (
        "Workload with 19 pod sets",
        _workload(*({"name": f"ps{i}"} for i in range(19))),
        "must have at most 18 items",
    ),
    (
        "Workload with two pod sets using minCount",
        _workload(
            {"name": "a", "count": 2, "minCount": 1}, {"name": "b", "count": 2, "minCount": 1}
        ),
        "at most one pod set may set minCount",
    ),
    (
        "Workload with minCount above count",
        _workload({"count": 2, "minCount": 3}),
        "minCount must not be greater than count",
    ),
    (
        "Workload priorityClassRef without priority",
        _workload(
            {},
            priorityClassRef={
                "group": "kueue.x-k8s.io",
                "kind": "WorkloadPriorityClass",
                "name": "high",
            },
        ),
        "priority must be set when priorityClassRef is set",
    ),
    (
        "Workload whose pod spec is not an object",
        _workload({"template": {"spec": 42}}),
        "template.spec: Invalid value",
    ),
    (
        "Workload whose pod spec has no containers",
        _workload({"template": {"spec": {"nodeSelector": {"pool": "a"}}}}),
        "spec.podSets[0].template.spec.containers: Required value",
    ),
    (
        "Workload whose containers are not a list",
        _workload({"template": {"spec": {"containers": "hello"}}}),
        "template.spec.containers: Invalid value",
    ),
    (
        "Workload with a request that is not a quantity",
        _workload(_requests(requests={"cpu": "1.5.3"})),
        "template.spec.containers[0].resources.requests.cpu: Invalid value",
    ),
    (
        "Workload with a limit that is not a quantity",
        _workload(_requests(limits={"memory": "12 bananas"})),
        "template.spec.containers[0].resources.limits.memory: Invalid value",
    ),
    (
        "Workload with a pod-level request that is not a quantity",
        _workload(
            {
                "template": {
                    "spec": {"resources": {"requests": {"cpu": "x"}}, "containers": [{"name": "c"}]}
                }
            }
        ),
        "template.spec.resources.requests.cpu: Invalid value",
    ),
    (
        "MultiKueueClusterSet that neither lists nor selects",
        _manifest("MultiKueueClusterSet", {"spec": {}}),
        "at least one of clusters and clusterSelector must be set",
    ),
    (
        "MultiKueueClusterSet listing more than 1000 clusters",
        _manifest("MultiKueueClusterSet", {"spec": {"clusters": [f"w-{i}" for i in range(1001)]}}),
        "must have at most 1000 items",
    ),
    (
        "WorkloadPriorityClass description too long",
        _manifest("WorkloadPriorityClass", {"value": 1, "description": "x" * 2049}),
        "may not be more than 2048 bytes",
    ),
]


@pytest.mark.parametrize(
    ("manifest", "message"),
    [pytest.param(manifest, message, id=case) for case, manifest, message in REJECTED],
)
def test_apiserver_rejects_invalid_object(
    manifest: dict[str, Any], message: str, objects: Objects
) -> None:
    # The hub's webhooks would reject it as well.
    assert validate(decode(manifest["kind"], manifest)) != []
    with pytest.raises(objects.rest.Error) as rejected:
        objects.create(copy.deepcopy(manifest))
    assert rejected.value.status == 422, rejected.value.body
    assert message in rejected.value.message, rejected.value.message


def test_apiserver_rejects_a_pod_template_that_is_not_an_object(objects: Objects) -> None:
    manifest = _workload({})
    manifest["spec"]["podSets"][0]["template"] = "hello"
    with pytest.raises(msgspec.ValidationError, match="Expected `object`, got `str`"):
        decode("Workload", manifest)  # the webhook denies what does not even decode
    with pytest.raises(objects.rest.Error) as rejected:
        objects.create(copy.deepcopy(manifest))
    assert rejected.value.status == 422, rejected.value.body
    assert "spec.podSets[0].template: Invalid value" in rejected.value.message


def test_pod_template_fields_fleetq_does_not_model_pass_through(objects: Objects) -> None:
    def container(name: str, **extra: Any) -> dict[str, Any]:
        return {
            "name": name,
            "image": "busybox",
            "command": ["sleep", "1"],
            "env": [{"name": "A", "value": "1"}],
            "resources": {"requests": {"cpu": "500m", "memory": 1024}, "limits": {"cpu": 1}},
            "securityContext": {"runAsNonRoot": True},
            **extra,
        }

    spec = {
        "initContainers": [container("sidecar", restartPolicy="Always")],
        "containers": [container("main")],
        "restartPolicy": "Never",
        "schedulerName": "custom",
        "nodeSelector": {"pool": "a"},
        "tolerations": [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                    ]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 1,
                        "preference": {"matchExpressions": [{"key": "x", "operator": "Exists"}]},
                    }
                ],
            },
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []},
        },
        "overhead": {"cpu": "10m"},
        "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "3"}},
    }
    template = {"metadata": {"labels": {"app": "x"}, "annotations": {"a": "b"}}, "spec": spec}
    manifest = _workload({"template": template})
    assert validate(decode("Workload", manifest)) == []
    stored = objects.create(copy.deepcopy(manifest))
    assert stored["spec"]["podSets"][0]["template"] == template


def test_typed_pod_template_fields_have_upstreams_types(
    upstream_module_dir: Path, kueue_crds: RunningFleet, kube_rest: dict[str, Any]
) -> None:
    """Every property fleetq types below a pod template exists upstream with that type,
    so typing it refuses only what upstream refuses."""
    path = upstream_module_dir / "config/components/crd/bases/kueue.x-k8s.io_workloads.yaml"
    upstream = yaml.safe_load(path.read_text())
    version = next(v for v in upstream["spec"]["versions"] if v["name"] == "v1beta2")
    served = kube_rest[kueue_crds.manager.name].get(
        f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{BY_KIND['Workload'].crd_name}"
    )
    theirs: dict[str, str] = {}
    ours: dict[str, str] = {}
    _property_types(version["schema"]["openAPIV3Schema"], "", theirs)
    _property_types(served["spec"]["versions"][0]["schema"]["openAPIV3Schema"], "", ours)
    typed = {p: t for p, t in ours.items() if _below_pod_template(p)}
    assert len(typed) > 40
    problems = [
        f"{p} is {t}, upstream {theirs.get(p, 'missing')}"
        for p, t in typed.items()
        if theirs.get(p) != t
    ]
    assert problems == []


@pytest.mark.parametrize(
    ("kind", "field", "change", "message"),
    [
        (
            "LocalQueue",
            "spec",
            {"clusterQueue": "other"},
            "clusterQueue cannot be changed once set",
        ),
        (
            "AdmissionCheck",
            "spec",
            {"controllerName": "example.com/other"},
            "controllerName cannot be changed",
        ),
        (
            "Topology",
            "spec",
            {"levels": [{"nodeLabel": "example.com/block"}]},
            "levels cannot be changed",
        ),
    ],
)
def test_apiserver_rejects_changing_immutable_field(
    kind: str, field: str, change: dict[str, Any], message: str, objects: Objects
) -> None:
    original = sample(kind)
    objects.apply(copy.deepcopy(original))
    changed = copy.deepcopy(original)
    changed[field].update(change)
    assert validate_update(decode(kind, original), decode(kind, changed)) != []
    with pytest.raises(objects.rest.Error) as rejected:
        objects.apply(changed)
    assert rejected.value.status == 422, rejected.value.body
    assert message in rejected.value.message, rejected.value.message


@pytest.fixture(scope="session", params=UPSTREAM_VERSIONS)
def upstream_module_dir(request: pytest.FixtureRequest) -> Path:
    """Upstream Kueue's Go module, located through the Go toolchain (never copied here)."""
    go = shutil.which("go") or "/usr/local/go/bin/go"
    with tempfile.TemporaryDirectory() as scratch:
        result = subprocess.run(
            [go, "mod", "download", "-json", f"sigs.k8s.io/kueue@{request.param}"],
            cwd=scratch,
            capture_output=True,
            text=True,
            check=True,
            timeout=300,
        )
    return Path(json.loads(result.stdout)["Dir"])


def upstream_examples(module: Path) -> list[tuple[str, dict[str, Any]]]:
    """Plain (non-templated) v1beta2 manifests of kinds fleetq serves, anywhere in the module."""
    found = []
    for path in sorted(module.rglob("*.yaml")):
        relative = path.relative_to(module)
        if "crd" in relative.parts or relative.parts[0] in ("charts", "site", "hack"):
            continue
        text = path.read_text(errors="replace")
        if "{{" in text or "kueue.x-k8s.io/v1beta2" not in text:
            continue
        try:
            documents = list(yaml.safe_load_all(text))
        except yaml.YAMLError:
            continue
        for position, document in enumerate(documents):
            if (
                isinstance(document, dict)
                and document.get("apiVersion") == "kueue.x-k8s.io/v1beta2"
                and document.get("kind") in BY_KIND
            ):
                found.append((f"{relative}#{position}", document))
    return found


def test_upstream_example_manifests_apply(
    upstream_module_dir: Path,
    kueue_crds: RunningFleet,
    kube_rest: dict[str, Any],
    namespace: str,
) -> None:
    examples = upstream_examples(upstream_module_dir)
    assert any("cmd/kueueviz/examples" in name for name, _ in examples), "examples not found"
    suffix = _suffix()
    for member in kueue_crds.all:
        made = Objects(kube_rest[member.name], namespace)
        try:
            for name, document in examples:
                manifest = copy.deepcopy(document)
                manifest["metadata"]["name"] = f"{manifest['metadata']['name']}-{suffix}"
                try:
                    made.apply(manifest)
                except made.rest.Error as error:
                    pytest.fail(f"{member.name}: {name} was rejected: {error}")
                assert validate(decode(manifest["kind"], manifest)) == [], name
        finally:
            made.cleanup()


def _type_of(node: dict[str, Any]) -> str:
    if node.get("x-kubernetes-int-or-string"):
        return "int-or-string"
    return str(node.get("type"))


def _property_types(node: dict[str, Any], path: str, out: dict[str, str]) -> None:
    out[path] = _type_of(node)
    if node.get("x-kubernetes-preserve-unknown-fields") and "properties" not in node:
        return
    for name, child in node.get("properties", {}).items():
        _property_types(child, f"{path}.{name}", out)
    if isinstance(node.get("items"), dict):
        _property_types(node["items"], f"{path}[]", out)
    if isinstance(node.get("additionalProperties"), dict):
        _property_types(node["additionalProperties"], f"{path}{{}}", out)


def _below_pod_template(path: str) -> bool:
    return ".template." in path


def test_schema_covers_every_upstream_property(
    upstream_module_dir: Path, kueue_crds: RunningFleet, kube_rest: dict[str, Any]
) -> None:
    bases = upstream_module_dir / "config" / "components" / "crd" / "bases"
    rest = kube_rest[kueue_crds.manager.name]
    compared = 0
    problems = []
    for path in sorted(bases.glob("*.yaml")):
        upstream = yaml.safe_load(path.read_text())
        kind = upstream["spec"]["names"]["kind"]
        if kind not in BY_KIND:
            continue
        version = next(v for v in upstream["spec"]["versions"] if v["name"] == "v1beta2")
        served = rest.get(
            f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{BY_KIND[kind].crd_name}"
        )
        ours_schema = served["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        theirs: dict[str, str] = {}
        ours: dict[str, str] = {}
        _property_types(version["schema"]["openAPIV3Schema"], "", theirs)
        _property_types(ours_schema, "", ours)
        for property_path, property_type in theirs.items():
            if _below_pod_template(property_path):
                continue
            compared += 1
            if property_path not in ours:
                problems.append(f"{kind}: missing {property_path} ({property_type})")
            elif ours[property_path] != property_type:
                problems.append(
                    f"{kind}: {property_path} is {ours[property_path]}, upstream {property_type}"
                )
    assert compared > 300
    assert problems == []

"""LimitRange defaults and RuntimeClass overhead in a pod set's requests, as upstream's
AdjustResources counts them (pkg/workload/resources.go, pkg/util/limitrange)."""

from __future__ import annotations

from typing import Any

from core.adapters.kueue_manifests import (
    limit_range_from_manifest,
    runtime_class_from_manifest,
    workload_from_manifest,
)
from core.engine.clock import ManualClock
from core.engine.engine import Engine
from core.engine.model import (
    ClusterQueue,
    FlavorQuotas,
    LocalQueue,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
)
from core.engine.resource_defaults import (
    NO_DEFAULTS,
    LimitRange,
    RuntimeClass,
    adjusted_requests,
    resource_view,
    summarize,
)


def limit_range(name: str, *items: dict[str, Any], namespace: str = "ns") -> LimitRange:
    return limit_range_from_manifest(
        {
            "apiVersion": "v1",
            "kind": "LimitRange",
            "metadata": {"namespace": namespace, "name": name},
            "spec": {"limits": list(items)},
        }
    )


def container(
    requests: dict[str, str] | None = None, limits: dict[str, str] | None = None, **extra: Any
) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": "c", "image": "busybox", "resources": resources, **extra}


def counted(spec: dict[str, Any], *ranges: LimitRange, **classes: RuntimeClass) -> dict[str, int]:
    return adjusted_requests(resource_view(spec), summarize(ranges), classes)


CPU_DEFAULTS = limit_range(
    "defaults",
    {"type": "Container", "defaultRequest": {"cpu": "500m"}, "default": {"cpu": "1"}},
)


def test_a_container_without_requests_counts_the_default_request() -> None:
    spec = {"containers": [container()]}
    assert counted(spec) == {}
    assert counted(spec, CPU_DEFAULTS) == {"cpu": 500}


def test_what_a_container_sets_itself_wins_and_defaults_fill_only_the_gaps() -> None:
    spec = {"containers": [container(requests={"memory": "1Gi"}), container({"cpu": "2"})]}
    assert counted(spec, CPU_DEFAULTS) == {"cpu": 2500, "memory": 1024**3}


def test_a_default_limit_alone_stands_in_for_the_missing_request() -> None:
    limits_only = limit_range("limits", {"type": "Container", "default": {"cpu": "750m"}})
    assert counted({"containers": [container()]}, limits_only) == {"cpu": 750}
    # A limit the container sets itself beats the default one.
    spec = {"containers": [container(limits={"cpu": "300m"})]}
    assert counted(spec, limits_only) == {"cpu": 300}


def test_init_containers_and_sidecars_get_defaults_too() -> None:
    spec = {
        "initContainers": [container(), container(restartPolicy="Always")],
        "containers": [container(), container()],
    }
    # Sidecar 500m beside two app containers of 500m each; the init step is 1000m.
    assert counted(spec, CPU_DEFAULTS) == {"cpu": 1500}


def test_the_first_limit_range_by_name_wins_and_other_types_are_ignored() -> None:
    first = limit_range("a", {"type": "Container", "defaultRequest": {"cpu": "100m"}})
    second = limit_range(
        "b",
        {"type": "Container", "defaultRequest": {"cpu": "900m", "memory": "64Mi"}},
        {"type": "PersistentVolumeClaim", "max": {"storage": "1Gi"}},
    )
    summary = summarize([second, first])
    assert dict(summary.container_default_request) == {"cpu": "100m", "memory": "64Mi"}
    assert counted({"containers": [container()]}, second, first) == {
        "cpu": 100,
        "memory": 64 * 1024**2,
    }


def test_pod_type_defaults_apply_only_to_pod_level_resources_the_template_has() -> None:
    pod = limit_range("pod", {"type": "Pod", "defaultRequest": {"cpu": "2"}})
    plain = {"containers": [container({"cpu": "1"})]}
    assert counted(plain, pod) == {"cpu": 1000}
    with_pod_level = {**plain, "resources": {}}
    assert counted(with_pod_level, pod) == {"cpu": 2000}


def test_a_runtime_class_overhead_is_added_unless_the_template_has_its_own() -> None:
    kata = runtime_class_from_manifest(
        {
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {"name": "kata"},
            "handler": "kata",
            "overhead": {"podFixed": {"cpu": "250m", "memory": "120Mi"}},
        }
    )
    spec = {"runtimeClassName": "kata", "containers": [container({"cpu": "1"})]}
    assert counted(spec, kata=kata) == {"cpu": 1250, "memory": 120 * 1024**2}
    own = {**spec, "overhead": {"cpu": "10m"}}
    assert counted(own, kata=kata) == {"cpu": 1010}
    assert counted(spec) == {"cpu": 1000}, "an unknown class adds nothing"
    assert counted(spec, kata=RuntimeClass(name="kata")) == {"cpu": 1000}


def test_without_defaults_the_count_is_the_templates_own() -> None:
    spec = {"containers": [container({"cpu": "1"}, {"cpu": "2", "memory": "1Gi"})]}
    assert adjusted_requests(resource_view(spec), NO_DEFAULTS, {}) == {
        "cpu": 1000,
        "memory": 1024**3,
    }


# ----------------------------------------------------------------------------- engine


def engine(cpu: int) -> Engine:
    e = Engine(clock=ManualClock())
    e.upsert_resource_flavor(ResourceFlavor(name="default"))
    e.upsert_cluster_queue(
        ClusterQueue(
            name="cq",
            resource_groups=(
                ResourceGroup(
                    covered_resources=("cpu", "memory"),
                    flavors=(
                        FlavorQuotas(
                            name="default",
                            resources=(
                                ResourceQuota(name="cpu", nominal=cpu),
                                ResourceQuota(name="memory", nominal=1024**4),
                            ),
                        ),
                    ),
                ),
            ),
        )
    )
    e.upsert_local_queue(LocalQueue(namespace="ns", name="lq", cluster_queue="cq"))
    return e


def workload(name: str, spec: dict[str, Any], created: int) -> Any:
    return workload_from_manifest(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {
                "namespace": "ns",
                "name": name,
                "uid": name,
                "creationTimestamp": created,
            },
            "spec": {
                "queueName": "lq",
                "podSets": [{"name": "main", "count": 1, "template": {"spec": spec}}],
            },
        }
    )


def admitted(e: Engine) -> list[str]:
    """Everything admitted by cycles run until one admits nothing (one head per cycle)."""
    out: list[str] = []
    while True:
        keys = [a.key for a in e.schedule().admitted]
        if not keys:
            return out
        out += keys


def test_a_namespace_default_request_is_charged_where_it_was_free_before() -> None:
    e = engine(cpu=1000)
    e.upsert_limit_range(CPU_DEFAULTS)
    for index, name in enumerate(("a", "b", "c")):
        e.add_workload(workload(name, {"containers": [container()]}, index))
    assert admitted(e) == ["ns/a", "ns/b"]
    assert e.cluster_queue_usage("cq") == {("default", "cpu"): 1000}
    status = e.workload_status("ns/a")
    assert status is not None and status.admission is not None
    assert dict(status.admission.pod_set_assignments[0].resource_usage) == {"cpu": 500}


def test_a_limit_range_created_later_recounts_only_waiting_workloads() -> None:
    e = engine(cpu=1000)
    e.add_workload(workload("running", {"containers": [container({"cpu": "1"})]}, 0))
    assert admitted(e) == ["ns/running"]
    e.add_workload(workload("small", {"containers": [container()]}, 1))
    e.upsert_limit_range(CPU_DEFAULTS)
    assert admitted(e) == []  # 500m now, where 0 would have fitted beside "running"
    assert e.cluster_queue_usage("cq") == {("default", "cpu"): 1000}
    e.delete_limit_range("ns", "defaults")
    assert admitted(e) == ["ns/small"]


def test_a_runtime_class_overhead_counts_against_quota() -> None:
    e = engine(cpu=1000)
    e.upsert_runtime_class(RuntimeClass(name="kata", overhead={"cpu": "250m"}))
    spec = {"runtimeClassName": "kata", "containers": [container({"cpu": "800m"})]}
    e.add_workload(workload("sandboxed", spec, 0))
    assert admitted(e) == []
    e.upsert_runtime_class(RuntimeClass(name="kata", overhead={"cpu": "200m"}))
    assert admitted(e) == ["ns/sandboxed"]
    assert e.cluster_queue_usage("cq") == {("default", "cpu"): 1000}


def test_limit_ranges_of_other_namespaces_do_not_apply() -> None:
    e = engine(cpu=1000)
    e.upsert_limit_range(
        limit_range(
            "elsewhere", {"type": "Container", "defaultRequest": {"cpu": "5"}}, namespace="other"
        )
    )
    e.add_workload(workload("a", {"containers": [container()]}, 0))
    assert admitted(e) == ["ns/a"]


def test_overhead_comes_on_top_of_pod_level_requests() -> None:
    """Pod-level requests replace the containers' sum; the overhead is added after."""
    from core.engine.pod_templates import pod_requests

    spec = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
        "resources": {"requests": {"cpu": "2"}},
        "overhead": {"cpu": "250m"},
    }
    assert pod_requests(spec)["cpu"] == 2250

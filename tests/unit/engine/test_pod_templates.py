"""Effective pod requests and scheduling hints read from opaque pod templates."""

from __future__ import annotations

from core.engine.pod_templates import pod_requests, pod_set_from_template
from core.engine.quantity import QuantityError, format_quantity, to_base_units


def test_containers_add_and_init_containers_take_the_max() -> None:
    spec = {
        "initContainers": [
            {"name": "i", "resources": {"requests": {"cpu": "2", "memory": "64Mi"}}}
        ],
        "containers": [
            {"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
            {"name": "b", "resources": {"requests": {"cpu": "250m"}}},
        ],
    }
    assert pod_requests(spec) == {"cpu": 2000, "memory": 1024**3}


def test_sidecars_add_to_app_containers_and_to_later_init_steps() -> None:
    spec = {
        "initContainers": [
            {"name": "sidecar", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
            {"name": "init", "resources": {"requests": {"cpu": "2500m"}}},
        ],
        "containers": [{"name": "app", "resources": {"requests": {"cpu": "1"}}}],
    }
    # init step: 1 (sidecar) + 2.5 = 3.5 beats running: 1 + 1 = 2.
    assert pod_requests(spec) == {"cpu": 3500}


def test_limits_default_requests_and_overhead_is_added() -> None:
    spec = {
        "overhead": {"cpu": "100m"},
        "containers": [{"name": "a", "resources": {"limits": {"cpu": "1", "nvidia.com/gpu": "2"}}}],
    }
    assert pod_requests(spec) == {"cpu": 1100, "nvidia.com/gpu": 2}


def test_pod_level_requests_override() -> None:
    spec = {
        "resources": {"requests": {"cpu": "3"}},
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
    }
    assert pod_requests(spec) == {"cpu": 3000, "memory": 1024**3}


def test_template_hints_are_extracted() -> None:
    ps = pod_set_from_template(
        name="workers",
        count=3,
        min_count=1,
        template={
            "spec": {
                "nodeSelector": {"pool": "a"},
                "tolerations": [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}],
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": "gpu", "operator": "In", "values": ["a100"]}
                                    ]
                                }
                            ]
                        }
                    }
                },
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
            }
        },
    )
    assert ps.count == 3 and ps.min_count == 1
    assert ps.node_selector == {"pool": "a"}
    assert ps.tolerations[0].operator == "Exists"
    assert ps.required_node_affinity[0].match_expressions[0].values == ("a100",)


def test_quantities_parse_to_base_units_rounding_up() -> None:
    assert to_base_units("cpu", "1") == 1000
    assert to_base_units("cpu", "0.0001") == 1
    assert to_base_units("memory", "1.5Gi") == 1536 * 1024**2
    assert to_base_units("memory", "1e3") == 1000
    assert to_base_units("memory", "1k") == 1000
    assert to_base_units("pods", 7) == 7
    assert format_quantity("cpu", 1500) == "1500m"
    assert format_quantity("cpu", 2000) == "2"
    assert format_quantity("memory", 3 * 1024**3) == "3Gi"
    assert format_quantity("pods", 5000) == "5k"


def test_bad_quantity_is_rejected() -> None:
    try:
        to_base_units("cpu", "lots")
    except QuantityError:
        return
    raise AssertionError("expected QuantityError")

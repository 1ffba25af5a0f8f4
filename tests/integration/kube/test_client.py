"""KubeClient against a real apiserver: CRUD, patches, server-side apply, typed errors,
pagination, the request budget and the write counter."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
import yaml

from core.api.api_struct import ApiStruct
from core.api.meta import ObjectMeta
from core.kube.client import KubeClient, PatchType
from core.kube.cluster_config import KubeconfigPolicy
from core.kube.errors import AlreadyExists, Conflict, Invalid, NotFound
from core.kube.resources import CONFIGMAPS, NAMESPACES, Resource
from core.kube.write_counter import WriteVerb
from devfleet.chart_install import mint_identity
from devfleet.cluster_access import RunningFleet
from tests.integration.rbac_resources import ROLE_BINDINGS, ROLES, SERVICE_ACCOUNTS

ClientFactory = Callable[..., Awaitable[KubeClient]]
FLOW_SCHEMAS = Resource(
    "flowcontrol.apiserver.k8s.io", "v1", "flowschemas", namespaced=False, kind="FlowSchema"
)
PRIORITY_LEVELS = Resource(
    "flowcontrol.apiserver.k8s.io",
    "v1",
    "prioritylevelconfigurations",
    namespaced=False,
    kind="PriorityLevelConfiguration",
)
pytestmark = pytest.mark.asyncio(loop_scope="session")


class ConfigMap(ApiStruct):
    """Just enough of a ConfigMap to prove typed decoding."""

    metadata: ObjectMeta
    data: dict[str, str] = {}


def config_map(name: str, namespace: str, **data: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": {"suite": "kube"}},
        "data": data,
    }


async def test_create_read_update_patch_delete(kube: KubeClient, namespace: str) -> None:
    created = await kube.create(CONFIGMAPS, config_map("c1", namespace, a="1"), into=ConfigMap)
    assert created.metadata.resource_version
    assert created.data == {"a": "1"}

    read = await kube.get(CONFIGMAPS, "c1", namespace=namespace, into=ConfigMap)
    assert read.metadata.uid == created.metadata.uid

    replaced = await kube.replace(
        CONFIGMAPS,
        "c1",
        {
            **config_map("c1", namespace, a="2"),
            "metadata": {
                "name": "c1",
                "namespace": namespace,
                "resourceVersion": read.metadata.resource_version,
            },
        },
    )
    assert replaced["data"] == {"a": "2"}

    merged = await kube.patch(CONFIGMAPS, "c1", {"data": {"b": "3"}}, namespace=namespace)
    assert merged["data"] == {"a": "2", "b": "3"}

    json_patched = await kube.patch(
        CONFIGMAPS,
        "c1",
        [{"op": "remove", "path": "/data/a"}],
        patch_type=PatchType.JSON,
        namespace=namespace,
    )
    assert json_patched["data"] == {"b": "3"}

    strategic = await kube.patch(
        CONFIGMAPS, "c1", {"data": {"c": "4"}}, patch_type=PatchType.STRATEGIC, namespace=namespace
    )
    assert strategic["data"] == {"b": "3", "c": "4"}

    await kube.delete(CONFIGMAPS, "c1", namespace=namespace)
    with pytest.raises(NotFound, match='configmaps "c1" not found'):
        await kube.get(CONFIGMAPS, "c1", namespace=namespace)


async def test_server_side_apply_tracks_owners_and_reports_field_conflicts(
    kube: KubeClient, namespace: str
) -> None:
    first = await kube.apply(
        CONFIGMAPS, "ssa", config_map("ssa", namespace, a="1"), field_manager="team-a"
    )
    assert first["data"] == {"a": "1"}
    # Another manager adds its own field: both are kept, each owned by its manager.
    both = await kube.apply(
        CONFIGMAPS, "ssa", config_map("ssa", namespace, b="2"), field_manager="team-b"
    )
    assert both["data"] == {"a": "1", "b": "2"}
    managers = {entry["manager"] for entry in both["metadata"]["managedFields"]}
    assert {"team-a", "team-b"} <= managers

    # Taking over a field someone else owns is a conflict unless forced.
    with pytest.raises(Conflict, match="conflict"):
        await kube.apply(
            CONFIGMAPS,
            "ssa",
            config_map("ssa", namespace, a="9"),
            field_manager="team-b",
            force=False,
        )
    forced = await kube.apply(
        CONFIGMAPS, "ssa", config_map("ssa", namespace, a="9", b="2"), field_manager="team-b"
    )
    assert forced["data"] == {"a": "9", "b": "2"}

    # Applying without a field drops it when this manager alone owned it.
    dropped = await kube.apply(
        CONFIGMAPS, "ssa", config_map("ssa", namespace, a="9"), field_manager="team-b"
    )
    assert dropped["data"] == {"a": "9"}


async def test_typed_errors_carry_the_apiservers_message(kube: KubeClient, namespace: str) -> None:
    with pytest.raises(NotFound) as missing:
        await kube.get(CONFIGMAPS, "nope", namespace=namespace)
    assert missing.value.status == 404

    original = await kube.create(CONFIGMAPS, config_map("c2", namespace, a="1"))
    with pytest.raises(AlreadyExists, match="already exists"):
        await kube.create(CONFIGMAPS, config_map("c2", namespace))

    await kube.patch(CONFIGMAPS, "c2", {"data": {"a": "2"}}, namespace=namespace)
    stale = {**config_map("c2", namespace, a="3")}
    stale["metadata"] = {
        "name": "c2",
        "namespace": namespace,
        "resourceVersion": original["metadata"]["resourceVersion"],
    }
    with pytest.raises(Conflict, match="the object has been modified") as lost:
        await kube.replace(CONFIGMAPS, "c2", stale)
    assert lost.value.status == 409

    with pytest.raises(Invalid) as invalid:
        await kube.create(CONFIGMAPS, config_map("Not_A_Valid_Name", namespace))
    assert invalid.value.status == 422
    assert 'ConfigMap "Not_A_Valid_Name" is invalid' in invalid.value.message
    assert [cause.field for cause in invalid.value.causes] == ["metadata.name"]


async def test_lists_follow_continue_tokens_and_honour_selectors(
    kube: KubeClient, namespace: str
) -> None:
    for index in range(7):
        await kube.create(CONFIGMAPS, config_map(f"p{index}", namespace))
    await kube.create(CONFIGMAPS, {"metadata": {"name": "unlabelled", "namespace": namespace}})

    page = await kube.list(
        CONFIGMAPS, namespace=namespace, label_selector="suite=kube", limit=3, into=ConfigMap
    )
    assert len(page.items) == 3 and page.metadata.continue_token

    items, version = await kube.list_all(
        CONFIGMAPS, namespace=namespace, label_selector="suite=kube", page_size=3, into=ConfigMap
    )
    assert sorted(item.metadata.name for item in items) == [f"p{i}" for i in range(7)]
    assert version

    by_name, _ = await kube.list_all(
        CONFIGMAPS, namespace=namespace, field_selector="metadata.name=unlabelled", into=dict
    )
    assert [item["metadata"]["name"] for item in by_name] == ["unlabelled"]


async def test_the_write_counter_counts_every_write_by_verb_and_resource(
    kube: KubeClient, namespace: str
) -> None:
    await kube.create(CONFIGMAPS, config_map("w", namespace))
    await kube.patch(CONFIGMAPS, "w", {"data": {"x": "1"}}, namespace=namespace)
    await kube.apply(CONFIGMAPS, "w", config_map("w", namespace, y="2"), field_manager="counter")
    await kube.get(CONFIGMAPS, "w", namespace=namespace)  # reads are not writes
    with pytest.raises(AlreadyExists):
        await kube.create(CONFIGMAPS, config_map("w", namespace))
    await kube.delete(CONFIGMAPS, "w", namespace=namespace)

    writes = kube.writes
    assert writes.count(WriteVerb.CREATE, "configmaps") == 2
    assert writes.count(WriteVerb.PATCH) == 1
    assert writes.count(WriteVerb.APPLY) == 1
    assert writes.count(WriteVerb.DELETE) == 1
    assert writes.total == 5
    assert writes.failed() == 1 and writes.failed(WriteVerb.CREATE) == 1


async def test_the_request_budget_spaces_requests_at_qps(
    client_factory: ClientFactory, namespace: str
) -> None:
    slow = await client_factory(qps=20, burst=1)
    start = time.monotonic()
    await asyncio.gather(*(slow.list(CONFIGMAPS, namespace=namespace, limit=1) for _ in range(11)))
    # One request from the burst, ten more at 50 ms each.
    assert time.monotonic() - start >= 0.48


async def test_a_self_contained_kubeconfig_passes_the_strict_secrets_policy(
    lite_fleet: RunningFleet,
) -> None:
    document = yaml.safe_load(lite_fleet.workers[0].kubeconfig.read_text())
    async with await KubeClient.from_kubeconfig(
        document, name="w", policy=KubeconfigPolicy.for_secrets()
    ) as client:
        namespaces, _ = await client.list_all(NAMESPACES, into=dict)
    assert "default" in {item["metadata"]["name"] for item in namespaces}


async def test_a_throttled_request_waits_out_retry_after_and_then_succeeds(
    kube: KubeClient, lite_fleet: RunningFleet, namespace: str, tmp_path: Path
) -> None:
    """Priority and fairness answers 429 with Retry-After; the client tries again after it.

    A priority level with no seats (a "jail") refuses the ServiceAccount's requests that
    arrive while one of them runs; giving the level seats while the client waits lets the
    next tries through. Without the retry every refused read would raise.
    """
    account, level = f"throttled-{namespace}", f"jail-{namespace}"
    await kube.create(SERVICE_ACCOUNTS, {"metadata": {"name": account, "namespace": namespace}})
    await kube.create(
        ROLES,
        {
            "metadata": {"name": account, "namespace": namespace},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}],
        },
        namespace=namespace,
    )
    await kube.create(
        ROLE_BINDINGS,
        {
            "metadata": {"name": account, "namespace": namespace},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": account,
            },
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
        },
        namespace=namespace,
    )
    await kube.create(PRIORITY_LEVELS, _jail_level(level, shares=0))
    await kube.create(FLOW_SCHEMAS, _flow_schema(level, account, namespace))
    await _until_in_force(kube, level)
    try:
        identity = mint_identity(
            lite_fleet.manager,
            namespace=namespace,
            service_account=account,
            release=account,
            path=tmp_path / "throttled.kubeconfig",
        )
        throttled = await KubeClient.from_kubeconfig(identity.kubeconfig, name="throttled")
        try:
            path = f"/api/v1/namespaces/{namespace}/configmaps"
            reads: list[asyncio.Task[bytes]] = []
            async with asyncio.timeout(30):
                # A level with no seats still runs a request when it runs none (so it is
                # never stuck); the ones that arrive meanwhile are refused. Bursts of
                # concurrent reads make such arrivals certain.
                while throttled.retried_after == 0:
                    reads += [
                        asyncio.create_task(throttled.request("GET", path)) for _ in range(20)
                    ]
                    await asyncio.sleep(0.5)
            await kube.patch(
                PRIORITY_LEVELS,
                level,
                {"spec": {"limited": {"nominalConcurrencyShares": 10}}},
            )
            async with asyncio.timeout(60):
                answers = await asyncio.gather(*reads)
            assert all(b'"kind":"ConfigMapList"' in a.replace(b" ", b"") for a in answers)
            assert throttled.retried_after >= 1
        finally:
            await throttled.close()
    finally:
        await kube.delete(FLOW_SCHEMAS, level)
        await kube.delete(PRIORITY_LEVELS, level)


async def _until_in_force(kube: KubeClient, flow_schema: str) -> None:
    """Priority and fairness applies a FlowSchema asynchronously; it says so by marking
    the schema not Dangling (its priority level found and in use)."""
    async with asyncio.timeout(30):
        while True:
            schema = await kube.get(FLOW_SCHEMAS, flow_schema)
            conditions = (schema.get("status") or {}).get("conditions") or []
            if any(c.get("type") == "Dangling" and c.get("status") == "False" for c in conditions):
                return
            await asyncio.sleep(0.2)


def _jail_level(name: str, *, shares: int) -> dict[str, object]:
    """A priority level that lends nothing and borrows nothing: `shares` 0 gives no seats."""
    return {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "PriorityLevelConfiguration",
        "metadata": {"name": name},
        "spec": {
            "type": "Limited",
            "limited": {
                "nominalConcurrencyShares": shares,
                "lendablePercent": 0,
                "borrowingLimitPercent": 0,
                "limitResponse": {"type": "Reject"},
            },
        },
    }


def _flow_schema(level: str, account: str, namespace: str) -> dict[str, object]:
    """Every request of the ServiceAccount goes to `level` (ahead of the built-in schemas)."""
    return {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "FlowSchema",
        "metadata": {"name": level},
        "spec": {
            "matchingPrecedence": 100,
            "priorityLevelConfiguration": {"name": level},
            "distinguisherMethod": {"type": "ByUser"},
            "rules": [
                {
                    "subjects": [
                        {
                            "kind": "ServiceAccount",
                            "serviceAccount": {"name": account, "namespace": namespace},
                        }
                    ],
                    "resourceRules": [
                        {
                            "verbs": ["*"],
                            "apiGroups": ["*"],
                            "resources": ["*"],
                            "namespaces": ["*"],
                            "clusterScope": True,
                        }
                    ],
                    "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                }
            ],
        },
    }

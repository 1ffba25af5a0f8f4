"""After the hub wrote the CRDs' conversion, `storage_serving` waits with a list only the
watch cache answers, in every served version, and gives up by a deadline naming what
still answered 429."""

from __future__ import annotations

from typing import Any, cast

import pytest

from core.api.registry import KindInfo
from core.kube.client import KubeClient
from core.kube.errors import Forbidden, TooManyRequests
from core.manager.webhooks.crd_conversion import (
    CONVERTED_CRD_NAMES,
    STORAGE_PROBE_SELECTOR,
    storage_serving,
)

WORKLOADS = "workloads.kueue.x-k8s.io"
LOCAL_QUEUES = "localqueues.kueue.x-k8s.io"


class InitialisingCaches:
    """An apiserver whose caches answer 429 for the first `refusals[(crd, version)]` lists."""

    def __init__(self, refusals: dict[tuple[str, str], int]) -> None:
        self.refusals = dict(refusals)
        self.calls: list[tuple[str, str, dict[str, Any]]] = []

    async def list(self, resource: KindInfo, **query: Any) -> object:
        key = (resource.crd_name, resource.version)
        self.calls.append((*key, query))
        if self.refusals.get(key, 0) > 0:
            self.refusals[key] -= 1
            raise TooManyRequests(429, "TooManyRequests", "storage is (re)initializing")
        return object()


def _client(fake: InitialisingCaches) -> KubeClient:
    return cast(KubeClient, fake)


async def test_every_converted_crd_is_probed_in_both_versions_from_the_cache_only() -> None:
    fake = InitialisingCaches({})
    assert await storage_serving(_client(fake)) == []
    probed = {(crd, version) for crd, version, _ in fake.calls}
    assert probed == {(crd, v) for crd in CONVERTED_CRD_NAMES for v in ("v1beta1", "v1beta2")}
    for _, _, query in fake.calls:
        # A limit without a selector would be answered by etcd while the cache is not
        # ready, which is how the old wait returned too early.
        assert "limit" not in query
        assert query == {"label_selector": STORAGE_PROBE_SELECTOR, "resource_version": "0"}


async def test_a_cache_still_initialising_is_asked_again_until_it_serves() -> None:
    fake = InitialisingCaches({(WORKLOADS, "v1beta1"): 3})
    waiting = await storage_serving(_client(fake), [WORKLOADS], poll_seconds=0)
    assert waiting == []
    assert [(crd, v) for crd, v, _ in fake.calls] == [
        (WORKLOADS, "v1beta2"),
        *[(WORKLOADS, "v1beta1")] * 4,
    ]


async def test_past_the_deadline_it_names_what_still_refuses_and_stops_asking() -> None:
    fake = InitialisingCaches({(WORKLOADS, "v1beta1"): 10**6, (LOCAL_QUEUES, "v1beta1"): 10**6})
    waiting = await storage_serving(
        _client(fake), [LOCAL_QUEUES, WORKLOADS], timeout_seconds=0.05, poll_seconds=0.01
    )
    assert waiting == [f"{LOCAL_QUEUES}/v1beta1", f"{WORKLOADS}/v1beta1"]
    assert len(fake.calls) < 50, "each pair is asked once more after the deadline, no more"


async def test_other_errors_are_not_waited_out() -> None:
    class Forbidding(InitialisingCaches):
        async def list(self, resource: KindInfo, **query: Any) -> object:
            raise Forbidden(403, "Forbidden", f"cannot list {resource.crd_name}")

    with pytest.raises(Forbidden):
        await storage_serving(_client(Forbidding({})), [WORKLOADS])

"""Reaching a worker from its kubeconfig, and merging its pods' logs into one prefixed stream."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from cli.ops.logs_command import stream_logs
from cli.ops.worker_access import WorkerAccessError, endpoint_from_kubeconfig, worker_endpoint
from cli.ops.worker_pod_logs import LogReadError, LogSource, log_sources
from core.api.codec import decode
from core.api.multikueue import MultiKueueCluster

KUBECONFIG = {
    "current-context": "b",
    "contexts": [
        {"name": "a", "context": {"cluster": "one", "user": "u"}},
        {"name": "b", "context": {"cluster": "two", "user": "u"}},
    ],
    "clusters": [
        {"name": "one", "cluster": {"server": "https://one:6443"}},
        {
            "name": "two",
            "cluster": {"server": "https://two:6443/", "certificate-authority-data": "Q0E="},
        },
    ],
    "users": [{"name": "u", "user": {"token": "t"}}],
}


def test_endpoint_is_the_current_context_of_the_workers_kubeconfig() -> None:
    endpoint = endpoint_from_kubeconfig("gpu-east", KUBECONFIG, "Secret hub/gpu-east")
    assert (endpoint.label, endpoint.context, endpoint.server, endpoint.ca_data) == (
        "gpu-east",
        "b",
        "https://two:6443",
        "Q0E=",
    )


class UntouchableManager:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the manager must not be called ({name})")


def test_a_kubeconfig_on_the_hubs_disk_is_reported_not_read() -> None:
    cluster = decode(
        MultiKueueCluster,
        {
            "metadata": {"name": "edge"},
            "spec": {
                "clusterSource": {
                    "kubeConfig": {
                        "location": "/etc/multikueue/kubeconfigs/edge",
                        "locationType": "Path",
                    }
                }
            },
        },
    )
    with pytest.raises(WorkerAccessError) as raised:
        worker_endpoint(UntouchableManager(), cluster, "kueue-system")  # type: ignore[arg-type]
    assert raised.value.cell == "kubeconfig on hub disk"
    assert "/etc/multikueue/kubeconfigs/edge" in str(raised.value)


def pod(name: str, containers: list[str], node: str = "n1") -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"nodeName": node, "containers": [{"name": c} for c in containers]},
    }


def test_log_sources_cover_every_container_unless_one_is_chosen() -> None:
    pods = [pod("p0", ["main"]), pod("p1", ["main", "sidecar"], node="")]
    assert [(s.prefix, s.node) for s in log_sources(pods, None)] == [
        ("[p0]", "n1"),
        ("[p1/main]", ""),
        ("[p1/sidecar]", ""),
    ]
    assert [s.prefix for s in log_sources(pods, "sidecar")] == ["[p1]"]
    assert log_sources(pods, "nope") == []


class ScriptedReader:
    """Stands in for PodLogReader: each source's lines, or an error after some lines."""

    def __init__(self, follow: bool, script: dict[str, list[str] | Exception]) -> None:
        self.follow = follow
        self.script = script

    def lines(self, source: LogSource) -> Iterator[str]:
        result = self.script[source.pod]
        if isinstance(result, Exception):
            yield "partial"
            raise result
        yield from result


@pytest.mark.parametrize("follow", [False, True])
def test_streams_merge_with_prefixes_and_count_failures(follow: bool) -> None:
    sources = [
        LogSource("a", "main", True, "n1"),
        LogSource("b", "main", True, "n1"),
        LogSource("c", "main", True, "n1"),
        LogSource("d", "main", True, ""),
    ]
    reader = ScriptedReader(
        follow,
        {"a": ["a1", "a2"], "b": LogReadError("HTTP 404 NotFound: gone"), "c": ["c1"]},
    )
    lines: list[str] = []
    problems: list[str] = []
    failed = stream_logs(reader, sources, lines.append, problems.append)  # type: ignore[arg-type]
    assert failed == 1
    assert sorted(lines) == ["[a] a1", "[a] a2", "[b] partial", "[c] c1"]
    assert lines.index("[a] a1") < lines.index("[a] a2")
    assert sorted(problems) == [
        "[b] cannot read logs: HTTP 404 NotFound: gone",
        "[d] no logs yet: the pod is not on a node (not scheduled)",
    ]

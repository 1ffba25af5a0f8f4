"""Watch lines: split from arbitrary chunks, decoded lazily into raw, dicts or typed structs."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import msgspec
import pytest

from core.api.local_queue import LocalQueue
from core.kube.errors import Gone, error_from_status
from core.kube.watch import WatchEventType, decode_watch_line, split_lines, watch_query
from tests import builders


def line(event_type: str, obj: dict[str, object]) -> bytes:
    return json.dumps({"type": event_type, "object": obj}).encode()


LOCAL_QUEUE = (
    builders.LocalQueue("team-a", "ns")
    .resource_version("812")
    .cluster_queue("cq")
    .status(pendingWorkloads=3)
    .obj()
)


def test_an_event_decodes_into_the_requested_struct() -> None:
    event = decode_watch_line(line("MODIFIED", LOCAL_QUEUE), LocalQueue)
    assert event.type is WatchEventType.MODIFIED
    assert isinstance(event.object, LocalQueue)
    assert event.object.spec.cluster_queue == "cq"
    assert event.object.status.pending_workloads == 3
    assert event.resource_version == "812"


def test_the_object_stays_raw_until_it_is_read() -> None:
    # A malformed object body is not noticed until someone asks for the object...
    broken = (
        b'{"type":"ADDED","object":{"metadata":{"resourceVersion":"9"},"spec":{"clusterQueue":7}}}'
    )
    event = decode_watch_line(broken, LocalQueue)
    assert event.type is WatchEventType.ADDED
    assert event.resource_version == "9"
    assert json.loads(bytes(event.raw))["spec"]["clusterQueue"] == 7
    # ...and only then fails, naming the JSON path.
    with pytest.raises(msgspec.ValidationError, match=r"spec.clusterQueue"):
        _ = event.object


def test_an_event_decodes_into_a_plain_dict() -> None:
    event = decode_watch_line(
        line("ADDED", {"metadata": {"name": "c", "resourceVersion": "5"}, "data": {"k": "v"}}), dict
    )
    assert event.object == {"metadata": {"name": "c", "resourceVersion": "5"}, "data": {"k": "v"}}
    assert event.resource_version == "5"


def test_a_bookmark_only_carries_the_resource_version() -> None:
    event = decode_watch_line(
        line(
            "BOOKMARK",
            {
                "kind": "LocalQueue",
                "metadata": {
                    "resourceVersion": "1234",
                    "annotations": {"k8s.io/initial-events-end": "true"},
                },
            },
        ),
        LocalQueue,
    )
    assert event.type is WatchEventType.BOOKMARK
    assert event.resource_version == "1234"


def test_an_error_event_carries_a_status_that_maps_to_gone() -> None:
    event = decode_watch_line(
        line(
            "ERROR",
            {
                "kind": "Status",
                "code": 410,
                "reason": "Expired",
                "message": "too old resource version: 5 (900)",
            },
        ),
        dict,
    )
    assert event.type is WatchEventType.ERROR
    error = error_from_status(event.status())
    assert isinstance(error, Gone)
    assert error.message == "too old resource version: 5 (900)"


def test_an_unknown_event_type_is_rejected() -> None:
    with pytest.raises(msgspec.ValidationError):
        decode_watch_line(line("RENAMED", {}), dict)


async def chunks_of(data: bytes, size: int) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


@pytest.mark.parametrize("chunk_size", [1, 7, 64, 100_000])
async def test_lines_are_reassembled_whatever_the_chunking(chunk_size: int) -> None:
    records = [
        line("ADDED", {"metadata": {"name": f"o{i}", "resourceVersion": str(i)}}) for i in range(20)
    ]
    stream = b"\n".join(records) + b"\n"
    got = [item async for item in split_lines(chunks_of(stream, chunk_size))]
    assert got == records


async def test_lines_larger_than_aiohttps_line_limit_come_through_whole() -> None:
    big = line(
        "ADDED",
        {"metadata": {"name": "big", "resourceVersion": "1"}, "data": {"blob": "x" * 500_000}},
    )
    got = [item async for item in split_lines(chunks_of(big + b"\n" + big, 65_536))]
    assert got == [big, big], "a final line without newline is still delivered"
    assert decode_watch_line(got[0], dict).object["data"]["blob"] == "x" * 500_000


async def test_blank_lines_are_skipped() -> None:
    got = [item async for item in split_lines(chunks_of(b"\n\na\n\nb\n", 3))]
    assert got == [b"a", b"b"]


def test_the_watch_query_asks_for_bookmarks_from_a_version() -> None:
    query = watch_query(
        "77", timeout_seconds=30, label_selector="app=x", field_selector="metadata.name=y"
    )
    assert query == {
        "watch": "true",
        "allowWatchBookmarks": "true",
        "timeoutSeconds": "30",
        "resourceVersion": "77",
        "labelSelector": "app=x",
        "fieldSelector": "metadata.name=y",
    }

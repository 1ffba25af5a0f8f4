"""The informer's store: keys, indexes kept in step with changes, and re-list diffs."""

from __future__ import annotations

from typing import Any

import pytest

from core.kube.object_meta import make_key, split_key
from core.kube.object_store import ObjectStore, label_index, namespace_index

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


def obj(namespace: str, name: str, rv: str, queue: str | None = None) -> dict[str, Any]:
    labels = {QUEUE_LABEL: queue} if queue else {}
    return {
        "metadata": {"namespace": namespace, "name": name, "resourceVersion": rv, "labels": labels}
    }


def store() -> ObjectStore[dict[str, Any]]:
    return ObjectStore({"queue": label_index(QUEUE_LABEL), "namespace": namespace_index})


def test_objects_are_keyed_by_namespace_and_name() -> None:
    s = store()
    s.upsert(obj("a", "w1", "1"))
    assert s.get("a/w1") is not None
    assert s.get_by_name("w1", "a") is s.get("a/w1")
    assert make_key(None, "cq") == "cq" and split_key("cq") == ("", "cq")
    assert split_key("ns/w") == ("ns", "w")


def test_indexes_follow_label_changes_and_deletes() -> None:
    s = store()
    s.upsert(obj("a", "w1", "1", queue="q1"))
    s.upsert(obj("a", "w2", "1", queue="q1"))
    s.upsert(obj("b", "w3", "1"))
    assert [o["metadata"]["name"] for o in s.by_index("queue", "q1")] == ["w1", "w2"]
    assert [o["metadata"]["name"] for o in s.by_index("namespace", "b")] == ["w3"]

    s.upsert(obj("a", "w2", "2", queue="q2"))  # moved to another queue
    assert s.index_keys("queue", "q1") == {"a/w1"}
    assert s.index_keys("queue", "q2") == {"a/w2"}

    s.remove("a/w1")
    assert s.index_keys("queue", "q1") == set()
    with pytest.raises(KeyError, match="no index named"):
        s.by_index("owner", "x")


def test_an_index_added_later_covers_existing_objects() -> None:
    s: ObjectStore[dict[str, Any]] = ObjectStore()
    s.upsert(obj("a", "w1", "1", queue="q1"))
    s.add_indexer("queue", label_index(QUEUE_LABEL))
    assert s.index_keys("queue", "q1") == {"a/w1"}


def test_replace_reports_exactly_what_changed() -> None:
    s = store()
    for name in ("same", "changed", "gone"):
        s.upsert(obj("a", name, "1", queue="q"))

    diff = s.replace(
        [
            obj("a", "same", "1", queue="q"),
            obj("a", "changed", "2", queue="q"),
            obj("a", "new", "3"),
        ]
    )

    assert [o["metadata"]["name"] for o in diff.added] == ["new"]
    assert [
        (old["metadata"]["resourceVersion"], new["metadata"]["resourceVersion"])
        for old, new in diff.updated
    ] == [("1", "2")]
    assert [o["metadata"]["name"] for o in diff.deleted] == ["gone"]
    assert sorted(s.keys()) == ["a/changed", "a/new", "a/same"]
    assert s.index_keys("queue", "q") == {"a/same", "a/changed"}

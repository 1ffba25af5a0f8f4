"""The Workload built from a Job: identity, ownership, pod set, counts, priority, metadata."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from core.api.codec import to_builtins
from core.api.validation import validate
from core.api.workload import PriorityClassGroup, PriorityClassKind
from integrations.batch_job.kind import BATCH_JOB
from integrations.batch_job.pod_sets import job_pod_sets
from integrations.framework.priority import (
    MissingPriorityClass,
    PodPriorityClass,
    PriorityClasses,
    resolve_priority,
)
from integrations.framework.topology_request import InvalidTopologyRequest
from integrations.framework.workload_builder import (
    WorkloadBuildOptions,
    build_workload,
    rebuilt_spec,
)

NO_CLASSES = PriorityClasses()


def test_built_workload_is_owned_by_the_job_and_valid(stored_job: dict[str, Any]) -> None:
    wl = build_workload(BATCH_JOB, stored_job, NO_CLASSES)
    assert wl.metadata.name == "job-sample-job-" + wl.metadata.name[-5:]
    assert len(wl.metadata.name) <= 63
    assert wl.metadata.namespace == "team-a"
    assert wl.metadata.finalizers == ["kueue.x-k8s.io/resource-in-use"]
    (owner,) = wl.metadata.owner_references
    assert (owner.api_version, owner.kind, owner.name) == ("batch/v1", "Job", "sample-job")
    assert owner.uid == "6f1c2a4e-3b7d-4e59-9a0c-1d2e3f405162"
    assert owner.controller is True and owner.block_owner_deletion is True
    assert wl.metadata.labels == {"kueue.x-k8s.io/job-uid": owner.uid}
    assert wl.spec.queue_name == "user-queue"
    assert wl.spec.active is True
    assert validate(wl) == []


def test_only_provisioning_request_annotations_are_copied(stored_job: dict[str, Any]) -> None:
    wl = build_workload(BATCH_JOB, stored_job, NO_CLASSES)
    assert wl.metadata.annotations == {"provreq.kueue.x-k8s.io/maxRunDurationSeconds": "600"}


def test_configured_label_keys_are_copied(stored_job: dict[str, Any]) -> None:
    options = WorkloadBuildOptions(label_keys_to_copy=("app", "absent"))
    wl = build_workload(BATCH_JOB, stored_job, NO_CLASSES, options)
    assert wl.metadata.labels["app"] == "trainer"
    assert "absent" not in wl.metadata.labels


def test_a_uid_that_is_no_label_value_is_not_recorded(stored_job: dict[str, Any]) -> None:
    stored_job["metadata"]["uid"] = "x" * 70
    assert (
        "kueue.x-k8s.io/job-uid"
        not in build_workload(BATCH_JOB, stored_job, NO_CLASSES).metadata.labels
    )


def test_long_name_mode_allows_longer_names(stored_job: dict[str, Any]) -> None:
    stored_job["metadata"]["name"] = "n" * 100
    short = build_workload(BATCH_JOB, stored_job, NO_CLASSES)
    long = build_workload(
        BATCH_JOB, stored_job, NO_CLASSES, WorkloadBuildOptions(max_name_length=253)
    )
    assert len(short.metadata.name) == 63
    assert len(long.metadata.name) == len("job-") + 100 + len("-abcde")
    assert short.metadata.name[-5:] == long.metadata.name[-5:]


def test_pod_set_is_the_template_without_controller_uid_labels(stored_job: dict[str, Any]) -> None:
    (pod_set,) = job_pod_sets(stored_job)
    assert pod_set.name == "main"
    assert pod_set.template["metadata"]["labels"] == {
        "app": "trainer",
        "batch.kubernetes.io/job-name": "sample-job",
    }
    expected_spec = stored_job["spec"]["template"]["spec"]
    assert pod_set.template["spec"] == expected_spec
    # The Job's own template is not modified.
    assert "controller-uid" in stored_job["spec"]["template"]["metadata"]["labels"]


def test_duplicate_env_vars_fold_to_the_last_value(stored_job: dict[str, Any]) -> None:
    stored_job["spec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "2"},
        {"name": "A", "value": "3"},
    ]
    (pod_set,) = job_pod_sets(stored_job)
    assert pod_set.template["spec"]["containers"][0]["env"] == [
        {"name": "A", "value": "3"},
        {"name": "B", "value": "2"},
    ]


@pytest.mark.parametrize(
    ("spec", "annotations", "count", "min_count"),
    [
        ({"parallelism": 3, "completions": 6}, {}, 3, None),
        ({"parallelism": 5, "completions": 2}, {}, 2, None),
        ({"parallelism": 4}, {}, 4, None),
        ({}, {}, 1, None),
        ({"parallelism": 0, "completions": 4}, {}, 0, None),
        ({"parallelism": 8, "completions": 16}, {"kueue.x-k8s.io/job-min-parallelism": "2"}, 8, 2),
        ({"parallelism": 8}, {"kueue.x-k8s.io/job-min-parallelism": "many"}, 8, None),
    ],
    ids=[
        "count is parallelism",
        "completions below parallelism cap the count",
        "no completions: parallelism",
        "parallelism defaults to 1",
        "parallelism 0 runs no pod",
        "min-parallelism becomes minCount (partial admission)",
        "an unreadable min-parallelism is ignored",
    ],
)
def test_pod_count_and_min_count(
    stored_job: dict[str, Any],
    spec: dict[str, Any],
    annotations: dict[str, str],
    count: int,
    min_count: int | None,
) -> None:
    stored_job["spec"].pop("parallelism")
    stored_job["spec"].pop("completions")
    stored_job["spec"].update(spec)
    stored_job["metadata"]["annotations"] = annotations
    (pod_set,) = job_pod_sets(stored_job)
    assert (pod_set.count, pod_set.min_count) == (count, min_count)


def test_succeeded_pods_do_not_shrink_the_count(stored_job: dict[str, Any]) -> None:
    before = job_pod_sets(stored_job)[0].count
    stored_job["status"] = {"succeeded": 5, "active": 1}
    assert job_pod_sets(stored_job)[0].count == before


def test_max_exec_time_label_becomes_the_limit(stored_job: dict[str, Any]) -> None:
    stored_job["metadata"]["labels"]["kueue.x-k8s.io/max-exec-time-seconds"] = "3600"
    assert (
        build_workload(BATCH_JOB, stored_job, NO_CLASSES).spec.maximum_execution_time_seconds
        == 3600
    )


def test_topology_request_always_names_the_completion_index(stored_job: dict[str, Any]) -> None:
    (pod_set,) = job_pod_sets(stored_job)
    assert pod_set.topology_request is not None
    assert pod_set.topology_request.pod_index_label == "batch.kubernetes.io/job-completion-index"
    assert pod_set.topology_request.required is None


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        (
            {"kueue.x-k8s.io/podset-required-topology": "cloud.example.com/rack"},
            {"required": "cloud.example.com/rack"},
        ),
        (
            {
                "kueue.x-k8s.io/podset-preferred-topology": "cloud.example.com/block",
                "kueue.x-k8s.io/podset-group-name": "g1",
            },
            {"preferred": "cloud.example.com/block", "podSetGroupName": "g1"},
        ),
        ({"kueue.x-k8s.io/podset-unconstrained-topology": "true"}, {"unconstrained": True}),
        (
            {
                "kueue.x-k8s.io/podset-required-topology": "rack",
                "kueue.x-k8s.io/podset-preferred-topology": "block",
            },
            {"required": "rack"},
        ),
        (
            {
                "kueue.x-k8s.io/podset-slice-required-topology": "host",
                "kueue.x-k8s.io/podset-slice-size": "4",
            },
            {"podSetSliceRequiredTopology": "host", "podSetSliceSize": 4},
        ),
    ],
    ids=["required", "preferred with group", "unconstrained", "required wins", "slices"],
)
def test_topology_annotations(
    stored_job: dict[str, Any], annotations: dict[str, str], expected: dict[str, Any]
) -> None:
    stored_job["spec"]["template"]["metadata"]["annotations"] = annotations
    (pod_set,) = job_pod_sets(stored_job)
    assert pod_set.topology_request is not None
    request = to_builtins(pod_set.topology_request)
    assert request == {"podIndexLabel": "batch.kubernetes.io/job-completion-index", **expected}


def test_unreadable_topology_annotation_is_an_error(stored_job: dict[str, Any]) -> None:
    stored_job["spec"]["template"]["metadata"]["annotations"] = {
        "kueue.x-k8s.io/podset-unconstrained-topology": "sure"
    }
    with pytest.raises(InvalidTopologyRequest, match="not a boolean"):
        job_pod_sets(stored_job)


# --- priority -----------------------------------------------------------------------------

CLASSES = PriorityClasses(
    workload_classes={"high": 1000, "low": 10},
    pod_classes={
        "system-critical": PodPriorityClass(2_000_000),
        "batch-default": PodPriorityClass(100, global_default=True),
        "other-default": PodPriorityClass(50, global_default=True),
    },
)


@pytest.mark.parametrize(
    ("job_label", "pod_class", "classes", "expected"),
    [
        (
            "high",
            "system-critical",
            CLASSES,
            ("kueue.x-k8s.io", "WorkloadPriorityClass", "high", 1000),
        ),
        (
            "",
            "system-critical",
            CLASSES,
            ("scheduling.k8s.io", "PriorityClass", "system-critical", 2_000_000),
        ),
        ("", "", CLASSES, ("scheduling.k8s.io", "PriorityClass", "other-default", 50)),
        ("", "", NO_CLASSES, None),
    ],
    ids=[
        "the Workload priority class label wins",
        "else the pods' priority class",
        "else the lowest global default",
        "else priority 0 without a class",
    ],
)
def test_priority(
    stored_job: dict[str, Any],
    job_label: str,
    pod_class: str,
    classes: PriorityClasses,
    expected: tuple[str, str, str, int] | None,
) -> None:
    if job_label:
        stored_job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = job_label
    if pod_class:
        stored_job["spec"]["template"]["spec"]["priorityClassName"] = pod_class
    wl = build_workload(BATCH_JOB, stored_job, classes)
    if expected is None:
        assert wl.spec.priority_class_ref is None
        assert wl.spec.priority == 0
        return
    group, kind, name, value = expected
    ref = wl.spec.priority_class_ref
    assert ref is not None
    assert (ref.group, ref.kind, ref.name) == (
        PriorityClassGroup(group),
        PriorityClassKind(kind),
        name,
    )
    assert wl.spec.priority == value
    assert validate(wl) == []


@pytest.mark.parametrize(
    ("workload_class", "pod_class", "message"),
    [
        ("urgent", "", 'WorkloadPriorityClass "urgent" not found'),
        ("", "gold", 'PriorityClass "gold" not found'),
    ],
)
def test_a_missing_priority_class_is_an_error(
    workload_class: str, pod_class: str, message: str
) -> None:
    with pytest.raises(MissingPriorityClass, match=message):
        resolve_priority(
            workload_class_name=workload_class, pod_class_name=pod_class, classes=CLASSES
        )


def test_rebuilt_spec_follows_the_job_but_keeps_active(stored_job: dict[str, Any]) -> None:
    existing = build_workload(BATCH_JOB, stored_job, NO_CLASSES)
    existing.spec.active = False
    edited = copy.deepcopy(stored_job)
    edited["spec"]["parallelism"] = 5
    edited["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "other-queue"
    spec = rebuilt_spec(BATCH_JOB, edited, existing, NO_CLASSES)
    assert spec.pod_sets[0].count == 5
    assert spec.queue_name == "other-queue"
    assert spec.active is False

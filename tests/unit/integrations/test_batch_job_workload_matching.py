"""When a Workload still stands for its Job, and what happens to the ones that do not."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from core.api.codec import decode, deep_copy
from core.api.resource_flavor import ResourceFlavor
from core.api.workload import Workload
from integrations.batch_job.admission import start_job
from integrations.batch_job.kind import BATCH_JOB
from integrations.framework.priority import PriorityClasses
from integrations.framework.workload_builder import build_workload
from integrations.framework.workload_matching import (
    PrebuiltOwnership,
    adopt_prebuilt_workload,
    match_workloads,
    workload_matches_job,
)

Flavors = dict[str, ResourceFlavor]
Edit = Callable[[dict[str, Any]], None]


def container(job: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = job["spec"]["template"]["spec"]["containers"][0]
    return found


def set_path(*path: str, value: Any) -> Edit:
    def edit(job: dict[str, Any]) -> None:
        target = job
        for key in path[:-1]:
            target = target.setdefault(key, {})
        target[path[-1]] = value

    return edit


EDITS: list[tuple[str, Edit, bool]] = [
    ("nothing changed", lambda job: None, True),
    (
        "the same request written differently",
        lambda job: container(job)["resources"]["requests"].update(cpu="0.5"),
        True,
    ),
    (
        "an empty field spelled out",
        lambda job: container(job).update(ports=[], workingDir=""),
        True,
    ),
    ("a new pod label", set_path("spec", "template", "metadata", "labels", "x", value="y"), True),
    (
        "a different nodeSelector",
        set_path("spec", "template", "spec", "nodeSelector", value={"zone": "b"}),
        True,
    ),
    ("more cpu", lambda job: container(job)["resources"]["requests"].update(cpu="1"), False),
    ("another image", lambda job: container(job).update(image="trainer:2.0"), False),
    ("higher parallelism", set_path("spec", "parallelism", value=4), False),
    ("fewer completions than parallelism", set_path("spec", "completions", value=2), False),
    (
        "partial admission turned on",
        set_path("metadata", "annotations", "kueue.x-k8s.io/job-min-parallelism", value="1"),
        False,
    ),
    (
        "a new max execution time",
        set_path("metadata", "labels", "kueue.x-k8s.io/max-exec-time-seconds", value="60"),
        False,
    ),
    (
        "another toleration",
        lambda job: job["spec"]["template"]["spec"]["tolerations"].append(
            {"key": "x", "operator": "Exists"}
        ),
        False,
    ),
    (
        "an init container",
        set_path("spec", "template", "spec", "initContainers", value=[{"name": "i", "image": "b"}]),
        False,
    ),
]


@pytest.mark.parametrize(("name", "edit", "equivalent"), EDITS, ids=[e[0] for e in EDITS])
def test_equivalence_of_a_pending_workload(
    stored_job: dict[str, Any], flavors: Flavors, name: str, edit: Edit, equivalent: bool
) -> None:
    wl = build_workload(BATCH_JOB, stored_job, PriorityClasses())
    edited = copy.deepcopy(stored_job)
    edit(edited)
    assert workload_matches_job(BATCH_JOB, edited, wl, flavors) is equivalent


def test_a_workload_owned_by_another_job_never_matches(
    stored_job: dict[str, Any], flavors: Flavors
) -> None:
    wl = build_workload(BATCH_JOB, stored_job, PriorityClasses())
    renamed = copy.deepcopy(stored_job)
    renamed["metadata"]["name"] = "other-job"
    assert not workload_matches_job(BATCH_JOB, renamed, wl, flavors)


def test_a_running_job_matches_its_admitted_workload(
    stored_job: dict[str, Any], flavors: Flavors, admit: Any
) -> None:
    wl = admit(stored_job, {"cpu": "gpu-a100"})
    running = start_job(stored_job, wl, flavors)
    assert workload_matches_job(BATCH_JOB, running, wl, flavors)
    assert workload_matches_job(BATCH_JOB, stored_job, wl, flavors), "admitted, not started yet"


def test_a_partially_admitted_running_job_matches_with_its_admitted_count(
    stored_job: dict[str, Any], flavors: Flavors, admit: Any
) -> None:
    stored_job["spec"].update(parallelism=8, completions=16)
    stored_job["metadata"]["annotations"]["kueue.x-k8s.io/job-min-parallelism"] = "2"
    wl = admit(stored_job, {"cpu": "spot"}, count=5)
    running = start_job(stored_job, wl, flavors)
    assert running["spec"]["parallelism"] == 5
    assert workload_matches_job(BATCH_JOB, running, wl, flavors)
    resized = copy.deepcopy(running)
    resized["spec"]["parallelism"] = 6
    assert not workload_matches_job(BATCH_JOB, resized, wl, flavors)


def test_quota_reserved_but_not_admitted_compares_tolerations(
    stored_job: dict[str, Any], flavors: Flavors, admit: Any
) -> None:
    wl = admit(stored_job, {"cpu": "gpu-a100"}, admitted=False)
    # Suspended: compared with the recorded pod sets, tolerations and all.
    assert workload_matches_job(BATCH_JOB, stored_job, wl, flavors)
    edited = copy.deepcopy(stored_job)
    edited["spec"]["template"]["spec"]["tolerations"] = []
    assert not workload_matches_job(BATCH_JOB, edited, wl, flavors)


def named(wl: Workload, name: str) -> Workload:
    clone = deep_copy(wl)
    clone.metadata.name = name
    return clone


def test_the_first_matching_workload_is_kept_and_duplicates_go(
    stored_job: dict[str, Any], flavors: Flavors
) -> None:
    wl = build_workload(BATCH_JOB, stored_job, PriorityClasses())
    result = match_workloads(BATCH_JOB, stored_job, [named(wl, "a"), named(wl, "b")], flavors)
    assert result.match is not None and result.match.metadata.name == "a"
    assert [w.metadata.name for w in result.to_delete] == ["b"]
    assert result.to_update is None and not result.stop_job


def test_a_suspended_job_updates_its_stale_pending_workload(
    stored_job: dict[str, Any], flavors: Flavors
) -> None:
    stale = build_workload(BATCH_JOB, stored_job, PriorityClasses())
    edited = copy.deepcopy(stored_job)
    edited["spec"]["parallelism"] = 5
    result = match_workloads(BATCH_JOB, edited, [stale], flavors)
    assert result.match is None
    assert result.to_update is stale
    assert result.to_delete == []
    assert not result.stop_job


def test_a_stale_workload_with_quota_is_deleted_not_updated(
    stored_job: dict[str, Any], flavors: Flavors, admit: Any
) -> None:
    stale = admit(stored_job, {"cpu": "gpu-a100"})
    edited = copy.deepcopy(stored_job)
    edited["spec"]["parallelism"] = 5
    result = match_workloads(BATCH_JOB, edited, [stale], flavors)
    assert result.to_update is None
    assert result.to_delete == [stale]


def test_a_running_job_without_a_match_is_stopped_and_restored_from_the_old_workload(
    stored_job: dict[str, Any], flavors: Flavors, admit: Any
) -> None:
    wl = admit(stored_job, {"cpu": "gpu-a100"})
    running = start_job(stored_job, wl, flavors)
    running["spec"]["template"]["spec"]["containers"][0]["image"] = "trainer:2.0"
    result = match_workloads(BATCH_JOB, running, [wl], flavors)
    assert result.stop_job
    assert result.restore_from is wl
    assert result.to_delete == [wl]


def test_a_finished_job_without_a_match_is_not_stopped(
    stored_job: dict[str, Any], flavors: Flavors
) -> None:
    stored_job["spec"]["suspend"] = False
    stored_job["status"] = {"conditions": [{"type": "Complete", "status": "True"}]}
    assert not match_workloads(BATCH_JOB, stored_job, [], flavors).stop_job


def test_a_running_job_with_no_workload_at_all_is_stopped_without_restore(
    stored_job: dict[str, Any], flavors: Flavors
) -> None:
    stored_job["spec"]["suspend"] = False
    result = match_workloads(BATCH_JOB, stored_job, [], flavors)
    assert result.stop_job and result.restore_from is None


# --- prebuilt Workloads (MultiKueue's remote copies) ---------------------------------------


def prebuilt(owner_uid: str | None) -> Workload:
    refs = (
        [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": "sample-job",
                "uid": owner_uid,
                "controller": True,
            }
        ]
        if owner_uid
        else []
    )
    return decode(
        Workload,
        {
            "metadata": {
                "name": "job-sample-job-abcde",
                "namespace": "team-a",
                "labels": {"kueue.x-k8s.io/multikueue-origin": "multikueue"},
                "ownerReferences": refs,
            },
            "spec": {"podSets": [{"name": "main", "count": 3, "template": {}}]},
        },
    )


def test_an_unowned_prebuilt_workload_is_adopted(stored_job: dict[str, Any]) -> None:
    state, adopted = adopt_prebuilt_workload(BATCH_JOB, stored_job, prebuilt(None))
    assert state is PrebuiltOwnership.ADOPTED
    (ref,) = adopted.metadata.owner_references
    assert (ref.kind, ref.name, ref.uid, ref.controller) == (
        "Job",
        "sample-job",
        stored_job["metadata"]["uid"],
        True,
    )
    assert adopted.metadata.labels == {
        "kueue.x-k8s.io/multikueue-origin": "multikueue",
        "kueue.x-k8s.io/job-uid": stored_job["metadata"]["uid"],
    }


@pytest.mark.parametrize(
    ("owner", "state"),
    [
        ("6f1c2a4e-3b7d-4e59-9a0c-1d2e3f405162", PrebuiltOwnership.OWNED),
        ("other", PrebuiltOwnership.FOREIGN),
    ],
)
def test_an_owned_prebuilt_workload_is_left_as_is(
    stored_job: dict[str, Any], owner: str, state: PrebuiltOwnership
) -> None:
    wl = prebuilt(owner)
    got_state, got = adopt_prebuilt_workload(BATCH_JOB, stored_job, wl)
    assert got_state is state
    assert got is wl

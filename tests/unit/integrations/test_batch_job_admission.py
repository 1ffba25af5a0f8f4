"""Starting an admitted Job and stopping it again: injection, conflicts, exact restore."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from core.api.resource_flavor import ResourceFlavor
from integrations.batch_job.admission import JobSubresource, plan_stop, start_job
from integrations.framework.json_patch import apply_patch
from integrations.framework.pod_set_info import InvalidPodSetInfo, MissingFlavor, PodSetConflict

Flavors = dict[str, ResourceFlavor]

GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
SPOT_TOLERATION = {"key": "spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
USER_TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}


def canonical(job: dict[str, Any]) -> str:
    """The JSON the apiserver would store (it sorts map keys)."""
    return json.dumps(job, sort_keys=True)


def pod_spec(job: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = job["spec"]["template"]["spec"]
    return spec


def pod_labels(job: dict[str, Any]) -> dict[str, str]:
    labels: dict[str, str] = job["spec"]["template"]["metadata"]["labels"]
    return labels


def run_stop(job: dict[str, Any], workload: Any) -> dict[str, Any]:
    """Apply a stop plan write by write, as the reconciler would."""
    current = job
    for write in plan_stop(job, workload):
        current = apply_patch(current, write.patch)
        assert current == write.job
    return current


# --- start ------------------------------------------------------------------------------


def test_start_unsuspends_and_injects_the_flavor(
    stored_job: dict[str, Any], flavors: Flavors, admit: Any
) -> None:
    wl = admit(stored_job, {"cpu": "gpu-a100", "memory": "gpu-a100", "nvidia.com/gpu": "gpu-a100"})
    started = start_job(stored_job, wl, flavors)
    assert started["spec"]["suspend"] is False
    assert pod_spec(started)["nodeSelector"] == {
        "kubernetes.io/arch": "amd64",
        "cloud.example.com/accelerator": "a100",
        "cloud.example.com/pool": "gpu",
    }
    assert pod_spec(started)["tolerations"] == [USER_TOLERATION, GPU_TOLERATION]
    assert started["spec"]["parallelism"] == 3, "no partial admission: parallelism unchanged"


def test_start_adds_kueues_pod_labels_and_workload_annotation(
    stored_job: dict[str, Any], flavors: Flavors, admit: Any
) -> None:
    wl = admit(stored_job, {"cpu": "plain"}, cluster_queue="team-a-cq")
    started = start_job(stored_job, wl, flavors)
    labels = pod_labels(started)
    assert labels["kueue.x-k8s.io/podset"] == "main"
    assert labels["kueue.x-k8s.io/local-queue-name"] == "user-queue"
    assert labels["kueue.x-k8s.io/cluster-queue-name"] == "team-a-cq"
    assert (
        labels["controller-uid"]
        == stored_job["spec"]["template"]["metadata"]["labels"]["controller-uid"]
    )
    annotations = started["spec"]["template"]["metadata"]["annotations"]
    assert annotations["kueue.x-k8s.io/workload"] == wl.metadata.name
    assert annotations["sidecar.istio.io/inject"] == "false"


def test_a_cluster_queue_name_unfit_for_a_label_is_not_put_on_pods(
    stored_job: dict[str, Any], flavors: Flavors, admit: Any
) -> None:
    wl = admit(stored_job, {"cpu": "plain"}, cluster_queue="team.a.cq")
    assert "kueue.x-k8s.io/cluster-queue-name" not in pod_labels(start_job(stored_job, wl, flavors))


def test_two_flavors_give_both_sets_of_labels_and_tolerations_in_name_order(
    stored_job: dict[str, Any], flavors: Flavors, admit: Any
) -> None:
    wl = admit(stored_job, {"cpu": "spot", "nvidia.com/gpu": "gpu-a100"})
    started = start_job(stored_job, wl, flavors)
    assert pod_spec(started)["nodeSelector"]["cloud.example.com/capacity"] == "spot"
    assert pod_spec(started)["nodeSelector"]["cloud.example.com/accelerator"] == "a100"
    assert pod_spec(started)["tolerations"] == [USER_TOLERATION, GPU_TOLERATION, SPOT_TOLERATION]


def test_admission_check_pod_set_updates_are_applied(
    stored_job: dict[str, Any], flavors: Flavors, admit: Any
) -> None:
    update: dict[str, Any] = {
        "name": "main",
        "labels": {"provisioning.example.com/request": "pr-1"},
        "annotations": {"cluster-autoscaler.kubernetes.io/consume-provisioning-request": "pr-1"},
        "nodeSelector": {"cloud.example.com/reservation": "r-7"},
        "tolerations": [{"key": "reserved", "operator": "Exists", "effect": "NoSchedule"}],
    }
    wl = admit(
        stored_job, {"cpu": "gpu-a100"}, checks=[{"name": "prov", "podSetUpdates": [update]}]
    )
    started = start_job(stored_job, wl, flavors)
    assert pod_labels(started)["provisioning.example.com/request"] == "pr-1"
    template_annotations = started["spec"]["template"]["metadata"]["annotations"]
    assert template_annotations[
        "cluster-autoscaler.kubernetes.io/consume-provisioning-request"
    ] == ("pr-1")
    assert pod_spec(started)["nodeSelector"]["cloud.example.com/reservation"] == "r-7"
    assert pod_spec(started)["tolerations"][-1] == update["tolerations"][0]


def test_a_toleration_the_job_already_has_is_not_duplicated(
    stored_job: dict[str, Any], flavors: Flavors, admit: Any
) -> None:
    pod_spec(stored_job)["tolerations"].append(dict(GPU_TOLERATION))
    wl = admit(stored_job, {"cpu": "gpu-a100"})
    assert pod_spec(start_job(stored_job, wl, flavors))["tolerations"] == [
        USER_TOLERATION,
        GPU_TOLERATION,
    ]


def test_a_node_selector_conflicting_with_the_flavor_is_a_clear_error(
    stored_job: dict[str, Any], flavors: Flavors, admit: Any
) -> None:
    pod_spec(stored_job)["nodeSelector"]["cloud.example.com/accelerator"] = "h100"
    wl = admit(stored_job, {"cpu": "gpu-a100"})
    with pytest.raises(PodSetConflict) as caught:
        start_job(stored_job, wl, flavors)
    message = str(caught.value)
    assert 'pod set "main"' in message
    assert 'nodeSelector key "cloud.example.com/accelerator" is "h100"' in message
    assert '"a100"' in message
    assert isinstance(caught.value, InvalidPodSetInfo), "permanent: finish as FailedToStart"


def test_an_admission_check_conflicting_with_a_flavor_is_named(
    stored_job: dict[str, Any], flavors: Flavors, admit: Any
) -> None:
    update = {"name": "main", "nodeSelector": {"cloud.example.com/pool": "cpu"}}
    wl = admit(
        stored_job, {"cpu": "gpu-a100"}, checks=[{"name": "prov", "podSetUpdates": [update]}]
    )
    with pytest.raises(PodSetConflict, match='admission check "prov" sets it to "cpu"'):
        start_job(stored_job, wl, flavors)


def test_a_label_conflict_is_reported_as_labels(
    stored_job: dict[str, Any], flavors: Flavors, admit: Any
) -> None:
    pod_labels(stored_job)["kueue.x-k8s.io/podset"] = "workers"
    wl = admit(stored_job, {"cpu": "plain"})
    with pytest.raises(PodSetConflict, match=re.escape('labels key "kueue.x-k8s.io/podset"')):
        start_job(stored_job, wl, flavors)


def test_an_unknown_flavor_is_reported_for_a_retry(
    stored_job: dict[str, Any], flavors: Flavors, admit: Any
) -> None:
    wl = admit(stored_job, {"cpu": "h100-reserved"})
    with pytest.raises(MissingFlavor, match='ResourceFlavor "h100-reserved"'):
        start_job(stored_job, wl, flavors)


@pytest.mark.parametrize(
    ("sync_completions", "admitted", "parallelism", "completions"),
    [(False, 5, 5, 16), (True, 5, 5, 5)],
    ids=["completions unchanged", "completions follow parallelism"],
)
def test_partial_admission_sets_parallelism_to_the_admitted_count(
    stored_job: dict[str, Any],
    flavors: Flavors,
    admit: Any,
    sync_completions: bool,
    admitted: int,
    parallelism: int,
    completions: int,
) -> None:
    stored_job["spec"].update(parallelism=8, completions=16)
    stored_job["metadata"]["annotations"]["kueue.x-k8s.io/job-min-parallelism"] = "2"
    if sync_completions:
        stored_job["metadata"]["annotations"][
            "kueue.x-k8s.io/job-completions-equal-parallelism"
        ] = "true"
    wl = admit(stored_job, {"cpu": "spot"}, count=admitted)
    started = start_job(stored_job, wl, flavors)
    assert started["spec"]["parallelism"] == parallelism
    assert started["spec"]["completions"] == completions


def test_without_partial_admission_the_assignment_count_does_not_touch_parallelism(
    stored_job: dict[str, Any], flavors: Flavors, admit: Any
) -> None:
    wl = admit(stored_job, {"cpu": "spot"}, count=2)
    assert start_job(stored_job, wl, flavors)["spec"]["parallelism"] == 3


def test_topology_assignment_gates_the_pods(
    stored_job: dict[str, Any], flavors: Flavors, admit: Any
) -> None:
    wl = admit(stored_job, {"cpu": "plain"}, topology=True)
    started = start_job(stored_job, wl, flavors)
    assert pod_spec(started)["schedulingGates"] == [{"name": "kueue.x-k8s.io/topology"}]
    annotations = started["spec"]["template"]["metadata"]["annotations"]
    assert annotations["kueue.x-k8s.io/podset-unconstrained-topology"] == "true"


def test_starting_a_started_job_changes_nothing(
    stored_job: dict[str, Any], flavors: Flavors, admit: Any
) -> None:
    stored_job["spec"].update(parallelism=8, completions=16)
    stored_job["metadata"]["annotations"]["kueue.x-k8s.io/job-min-parallelism"] = "2"
    wl = admit(stored_job, {"cpu": "gpu-a100"}, count=4, topology=True)
    once = start_job(stored_job, wl, flavors)
    assert canonical(start_job(once, wl, flavors)) == canonical(once)


def test_start_does_not_modify_its_input(
    stored_job: dict[str, Any], flavors: Flavors, admit: Any
) -> None:
    before = copy.deepcopy(stored_job)
    start_job(stored_job, admit(stored_job, {"cpu": "gpu-a100"}), flavors)
    assert stored_job == before


# --- stop -------------------------------------------------------------------------------


def started_with_status(job: dict[str, Any]) -> dict[str, Any]:
    running = copy.deepcopy(job)
    running["status"] = {"startTime": "2025-03-01T10:06:00Z", "active": 3, "ready": 3}
    return running


@pytest.mark.parametrize(
    ("resource_flavors", "partial", "checks", "topology"),
    [
        ({"cpu": "gpu-a100"}, False, [], False),
        ({"cpu": "spot", "nvidia.com/gpu": "gpu-a100"}, True, [], False),
        (
            {"cpu": "spot"},
            True,
            [
                {
                    "name": "prov",
                    "podSetUpdates": [
                        {
                            "name": "main",
                            "labels": {"x": "y"},
                            "nodeSelector": {"r": "1"},
                            "tolerations": [{"key": "k", "operator": "Exists"}],
                        }
                    ],
                }
            ],
            True,
        ),
    ],
    ids=["one flavor", "two flavors, partial admission", "admission check and topology"],
)
def test_stop_restores_the_job_byte_for_byte(
    stored_job: dict[str, Any],
    flavors: Flavors,
    admit: Any,
    resource_flavors: dict[str, str],
    partial: bool,
    checks: list[dict[str, Any]],
    topology: bool,
) -> None:
    if partial:
        stored_job["spec"].update(parallelism=8, completions=16)
        stored_job["metadata"]["annotations"]["kueue.x-k8s.io/job-min-parallelism"] = "2"
    original = copy.deepcopy(stored_job)
    wl = admit(
        stored_job, resource_flavors, count=5 if partial else None, checks=checks, topology=topology
    )
    running = started_with_status(start_job(stored_job, wl, flavors))
    assert canonical(running) != canonical(original)

    stopped = run_stop(running, wl)
    # Everything the start changed is back; status keeps what the Job controller owns.
    stopped.pop("status")
    original.pop("status")
    assert canonical(stopped) == canonical(original)


def test_stop_is_three_ordered_writes(
    stored_job: dict[str, Any], flavors: Flavors, admit: Any
) -> None:
    wl = admit(stored_job, {"cpu": "gpu-a100"})
    running = started_with_status(start_job(stored_job, wl, flavors))
    suspend, clear, restore = plan_stop(running, wl)

    assert suspend.subresource is JobSubresource.MAIN
    assert suspend.job["spec"]["suspend"] is True
    assert suspend.job["metadata"]["annotations"]["kueue.x-k8s.io/stopping"] == "true"
    assert pod_spec(suspend.job) == pod_spec(running), "template waits for startTime to clear"

    assert clear.subresource is JobSubresource.STATUS
    assert clear.patch == [{"op": "remove", "path": "/status/startTime"}]

    assert restore.subresource is JobSubresource.MAIN
    assert "kueue.x-k8s.io/stopping" not in restore.job["metadata"]["annotations"]
    assert pod_spec(restore.job)["nodeSelector"] == {"kubernetes.io/arch": "amd64"}


def test_an_interrupted_stop_is_finished_by_the_next_plan(
    stored_job: dict[str, Any], flavors: Flavors, admit: Any
) -> None:
    wl = admit(stored_job, {"cpu": "gpu-a100"})
    running = started_with_status(start_job(stored_job, wl, flavors))
    first, *_ = plan_stop(running, wl)
    crashed = apply_patch(running, first.patch)  # the hub died after the first write

    resumed = plan_stop(crashed, wl)
    assert [w.subresource for w in resumed] == [JobSubresource.STATUS, JobSubresource.MAIN]
    assert resumed[-1].job == plan_stop(running, wl)[-1].job


def test_stopping_a_stopped_job_plans_nothing(
    stored_job: dict[str, Any], flavors: Flavors, admit: Any
) -> None:
    wl = admit(stored_job, {"cpu": "gpu-a100"})
    stopped = run_stop(started_with_status(start_job(stored_job, wl, flavors)), wl)
    assert plan_stop(stopped, wl) == []
    assert plan_stop(stored_job, wl) == [], "a never-started Job is already stopped"


def test_without_a_workload_the_job_is_only_suspended(stored_job: dict[str, Any]) -> None:
    stored_job["spec"]["suspend"] = False
    pod_spec(stored_job)["nodeSelector"]["injected"] = "by-someone"
    stopped = run_stop(stored_job, None)
    assert stopped["spec"]["suspend"] is True
    assert pod_spec(stopped)["nodeSelector"]["injected"] == "by-someone"
    assert "kueue.x-k8s.io/stopping" not in stopped["metadata"]["annotations"]


def test_stop_keeps_labels_the_job_controller_owns(
    stored_job: dict[str, Any], flavors: Flavors, admit: Any
) -> None:
    wl = admit(stored_job, {"cpu": "gpu-a100"})
    running = started_with_status(start_job(stored_job, wl, flavors))
    stopped = run_stop(running, wl)
    assert pod_labels(stopped)["controller-uid"] == pod_labels(stored_job)["controller-uid"]
    assert "kueue.x-k8s.io/podset" not in pod_labels(stopped)


def test_stop_drops_an_annotations_map_it_emptied(
    stored_job: dict[str, Any], flavors: Flavors, admit: Any
) -> None:
    del stored_job["metadata"]["annotations"]
    wl = admit(stored_job, {"cpu": "gpu-a100"})
    stopped = run_stop(started_with_status(start_job(stored_job, wl, flavors)), wl)
    assert "annotations" not in stopped["metadata"]

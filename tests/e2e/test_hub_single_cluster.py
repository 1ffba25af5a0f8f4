"""`fleetq hub` as a real process, queueing real Jobs and JobSets on one cluster.

The hub manages worker-1 of the full fleet on its own (no MultiKueue), with batch/job and
JobSet enabled; the real JobSet controller runs there. A ResourceFlavor for the GPU node
pool and a ClusterQueue with 16 GPUs of quota:
- three Jobs of 8 GPUs whose pods "run" for a few seconds on kwok nodes: at most two run
  at once, all three complete on GPU nodes (the flavor's nodeSelector was injected at
  start), and the hub's /metrics counts them;
- a JobSet of a driver and 4 GPU workers is one Workload with a pod set per replicated
  job, is admitted, its pods land on the flavor's nodes, it finishes and frees the quota;
- a low-priority JobSet preempted by a high-priority Job is suspended with its templates
  restored (JobSet suspends its child Jobs, their pods go), and runs again once the Job
  is done;
- a JobSet whose child Job fails ends Failed (JobSet's failurePolicy), and so does its
  Workload.
"""

from __future__ import annotations

import contextlib
import time
import urllib.request
from typing import Any

from kubernetes import client

from devfleet.cluster_access import ClusterAccess
from devfleet.polling import until
from tests.builders import WorkloadPriorityClass, kwok_job, kwok_jobset
from tests.e2e.gpu_queue import GPU, POOL_LABEL
from tests.e2e.single_cluster_hub import GROUP, VERSION, create_kueue_object


def test_three_8_gpu_jobs_share_16_gpus_two_at_a_time_and_all_complete(
    hub_process: dict[str, Any], gpu_queue: tuple[str, str, str]
) -> None:
    worker: ClusterAccess = hub_process["worker"]
    namespace, _, cq = gpu_queue
    with worker.api_client() as api_client:
        custom = client.CustomObjectsApi(api_client)
        batch = client.BatchV1Api(api_client)
        names = [f"train-{i}" for i in range(3)]
        for name in names:
            job = kwok_job(name, gpus_per_pod=8, pods=1, run_seconds=4).queue("team")
            job.suspend()  # no webhook in this test: submit suspended
            batch.create_namespaced_job(namespace, job.obj())

        most_running = 0
        deadline = time.monotonic() + 120
        complete: set[str] = set()
        while time.monotonic() < deadline and len(complete) < len(names):
            running = 0
            for item in batch.list_namespaced_job(namespace).items:
                conditions = item.status.conditions or []
                if any(c.type == "Complete" and c.status == "True" for c in conditions):
                    complete.add(item.metadata.name)
                elif item.spec.suspend is False:
                    running += 1
            most_running = max(most_running, running)
            time.sleep(0.3)
        assert complete == set(names), f"completed: {sorted(complete)}"
        assert most_running == 2, f"at most two 8-GPU jobs fit in 16 GPUs; saw {most_running}"

        pods = client.CoreV1Api(api_client).list_namespaced_pod(namespace).items
        nodes = {pod.spec.node_name for pod in pods if pod.spec.node_name}
        assert nodes and all(node.startswith("worker-1-gpu-") for node in nodes)
        assert all(pod.spec.node_selector == {POOL_LABEL: "gpu"} for pod in pods)
        workloads = custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "workloads")
        finished = [
            w
            for w in workloads["items"]
            if any(
                c["type"] == "Finished" and c["status"] == "True" for c in w["status"]["conditions"]
            )
        ]
        assert len(finished) == 3

    port = hub_process["metrics_port"]
    deadline = time.monotonic() + 10
    admitted = 0.0
    while time.monotonic() < deadline and admitted < 3:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
            text = reply.read().decode()
        admitted = sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith("kueue_admitted_workloads_total{")
            and f'cluster_queue="{cq}"' in line
        )
        time.sleep(0.3)
    assert admitted == 3, f"kueue_admitted_workloads_total for {cq}: {admitted}"


# -- JobSets -------------------------------------------------------------------------------
JOBSET = ("jobset.x-k8s.io", "v1alpha2", "jobsets")


def _queued_jobset(name: str, *, workers: int, gpus: int, run_seconds: float) -> dict[str, Any]:
    # No webhook in these tests: submitted suspended.
    jobset = kwok_jobset(name, workers=workers, gpus_per_worker=gpus, run_seconds=run_seconds)
    return jobset.queue("team").suspend().obj()


def _get_jobset(custom: Any, namespace: str, name: str) -> dict[str, Any]:
    group, version, plural = JOBSET
    found: dict[str, Any] = custom.get_namespaced_custom_object(
        group, version, namespace, plural, name
    )
    return found


def _create_jobset(custom: Any, namespace: str, body: dict[str, Any]) -> None:
    group, version, plural = JOBSET
    custom.create_namespaced_custom_object(group, version, namespace, plural, body)


def _true(obj: dict[str, Any] | None, kind: str) -> dict[str, Any] | None:
    for condition in ((obj or {}).get("status") or {}).get("conditions") or ():
        if condition.get("type") == kind and condition.get("status") == "True":
            return dict(condition)
    return None


def _workload_of_jobset(custom: Any, namespace: str, name: str) -> dict[str, Any] | None:
    listed = custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "workloads")
    for workload in listed["items"]:
        owners = workload["metadata"].get("ownerReferences") or []
        if any(o["kind"] == "JobSet" and o["name"] == name for o in owners):
            return dict(workload)
    return None


def _cq_gpus_in_use(custom: Any, cq: str) -> int:
    status = custom.get_cluster_custom_object(GROUP, VERSION, "clusterqueues", cq).get("status")
    total = 0
    for flavor in (status or {}).get("flavorsUsage") or ():
        for resource in flavor.get("resources") or ():
            if resource["name"] == GPU:
                total += int(str(resource.get("total") or "0"))
    return total


def _jobset_pod_selectors(core: Any, namespace: str, name: str) -> list[Any]:
    return list(
        core.list_namespaced_pod(
            namespace, label_selector=f"jobset.sigs.k8s.io/jobset-name={name}"
        ).items
    )


def test_a_jobset_of_a_driver_and_4_gpu_workers_runs_as_one_workload_and_frees_quota(
    hub_process: dict[str, Any], gpu_queue: tuple[str, str, str]
) -> None:
    worker: ClusterAccess = hub_process["worker"]
    namespace, _, cq = gpu_queue
    with worker.api_client() as api_client:
        custom = client.CustomObjectsApi(api_client)
        core = client.CoreV1Api(api_client)
        _create_jobset(
            custom, namespace, _queued_jobset("pretrain", workers=4, gpus=4, run_seconds=4)
        )

        workload = until(
            lambda: _workload_of_jobset(custom, namespace, "pretrain"), "its Workload", 30
        )
        assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == [
            ("driver", 1),
            ("workers", 4),
        ]
        until(
            lambda: _true(_workload_of_jobset(custom, namespace, "pretrain"), "Admitted"),
            "the Workload admitted",
            60,
        )
        started = until(
            lambda: (
                (j := _get_jobset(custom, namespace, "pretrain"))["spec"]["suspend"] is False and j
            ),
            "the JobSet started on its admission",
            30,
        )
        for replicated in started["spec"]["replicatedJobs"]:
            pod_spec = replicated["template"]["spec"]["template"]["spec"]
            assert pod_spec["nodeSelector"] == {POOL_LABEL: "gpu"}

        def all_pods_placed() -> list[Any] | None:
            pods = _jobset_pod_selectors(core, namespace, "pretrain")
            return pods if len(pods) == 5 and all(p.spec.node_name for p in pods) else None

        pods = until(all_pods_placed, "the driver and 4 workers scheduled", 60)
        assert all(p.spec.node_name.startswith("worker-1-gpu-") for p in pods)
        # The child Jobs are queued with their JobSet, never on their own.
        listed = custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "workloads")
        owners = [o["kind"] for w in listed["items"] for o in w["metadata"]["ownerReferences"]]
        assert owners == ["JobSet"], owners
        until(
            lambda: _true(_get_jobset(custom, namespace, "pretrain"), "Completed"),
            "the JobSet Completed",
            90,
        )
        finished = until(
            lambda: _true(_workload_of_jobset(custom, namespace, "pretrain"), "Finished"),
            "the Workload Finished",
            60,
        )
        assert finished["reason"] == "Succeeded"
        until(lambda: _cq_gpus_in_use(custom, cq) == 0 or None, "the GPUs freed", 30)


def test_a_preempted_jobset_is_suspended_restored_and_runs_again(
    hub_process: dict[str, Any], gpu_queue: tuple[str, str, str]
) -> None:
    worker: ClusterAccess = hub_process["worker"]
    namespace, _, cq = gpu_queue
    suffix = namespace.rpartition("-")[2]
    low, high = f"low-{suffix}", f"high-{suffix}"
    with worker.api_client() as api_client:
        custom = client.CustomObjectsApi(api_client)
        batch = client.BatchV1Api(api_client)
        core = client.CoreV1Api(api_client)
        custom.patch_cluster_custom_object(
            GROUP,
            VERSION,
            "clusterqueues",
            cq,
            {"spec": {"preemption": {"withinClusterQueue": "LowerPriority"}}},
        )
        for name, value in ((low, 10), (high, 1000)):
            create_kueue_object(
                custom, "workloadpriorityclasses", WorkloadPriorityClass(name, value).obj()
            )
        try:
            body = _queued_jobset("long", workers=4, gpus=4, run_seconds=600)
            body["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = low
            _create_jobset(custom, namespace, body)
            until(
                lambda: (
                    (j := _get_jobset(custom, namespace, "long"))["spec"]["suspend"] is False
                    and (j.get("status") or {}).get("replicatedJobsStatus")
                    and j
                ),
                "the low-priority JobSet running",
                60,
            )
            urgent = kwok_job("urgent", gpus_per_pod=8, pods=1, run_seconds=3).queue("team")
            urgent.priority_class(high).suspend()
            batch.create_namespaced_job(namespace, urgent.obj())

            stopped = until(
                lambda: (j := _get_jobset(custom, namespace, "long"))["spec"]["suspend"] and j,
                "the low-priority JobSet suspended by the preemption",
                60,
            )
            for replicated in stopped["spec"]["replicatedJobs"]:
                pod_spec = replicated["template"]["spec"]["template"]["spec"]
                assert pod_spec.get("nodeSelector") in (None, {}), "templates restored"
            evicted = _true(_workload_of_jobset(custom, namespace, "long"), "Evicted")
            assert evicted is not None and evicted["reason"] == "Preempted"

            seen: list[Any] = []

            def children_stopped() -> bool | None:
                # JobSet suspends its child Jobs (their pods go) rather than deleting them.
                selector = "jobset.sigs.k8s.io/jobset-name=long"
                children = batch.list_namespaced_job(namespace, label_selector=selector).items
                pods = core.list_namespaced_pod(namespace, label_selector=selector).items
                live = [p for p in pods if p.metadata.deletion_timestamp is None]
                seen[:] = [
                    [(j.metadata.name, j.spec.suspend) for j in children],
                    [(p.metadata.name, p.status.phase) for p in live],
                ]
                return (all(job.spec.suspend for job in children) and not live) or None

            try:
                until(children_stopped, "the JobSet's child Jobs suspended, their pods gone", 60)
            except AssertionError as error:
                raise AssertionError(f"{error}; children and live pods: {seen}") from None

            def urgent_done() -> bool | None:
                job = batch.read_namespaced_job("urgent", namespace)
                return (
                    any(
                        c.type == "Complete" and c.status == "True"
                        for c in job.status.conditions or ()
                    )
                    or None
                )

            until(urgent_done, "the high-priority Job complete", 90)
            until(
                lambda: _get_jobset(custom, namespace, "long")["spec"]["suspend"] is False or None,
                "the JobSet admitted and started again",
                60,
            )
        finally:
            group, version, plural = JOBSET
            with contextlib.suppress(client.ApiException):
                custom.delete_namespaced_custom_object(group, version, namespace, plural, "long")
            for name in (low, high):
                with contextlib.suppress(client.ApiException):
                    custom.delete_cluster_custom_object(
                        GROUP, VERSION, "workloadpriorityclasses", name
                    )


def test_a_jobset_failing_by_its_failure_policy_finishes_its_workload_failed(
    hub_process: dict[str, Any], gpu_queue: tuple[str, str, str]
) -> None:
    worker: ClusterAccess = hub_process["worker"]
    namespace, _, _ = gpu_queue
    with worker.api_client() as api_client:
        custom = client.CustomObjectsApi(api_client)
        body = _queued_jobset("doomed", workers=1, gpus=1, run_seconds=600)
        # A child Job past its deadline fails; JobSet's default failurePolicy (no
        # restarts) then fails the JobSet.
        body["spec"]["replicatedJobs"][1]["template"]["spec"]["activeDeadlineSeconds"] = 3
        _create_jobset(custom, namespace, body)
        failed = until(
            lambda: _true(_get_jobset(custom, namespace, "doomed"), "Failed"),
            "the JobSet Failed",
            90,
        )
        finished = until(
            lambda: _true(_workload_of_jobset(custom, namespace, "doomed"), "Finished"),
            "the Workload Finished",
            60,
        )
        assert finished["reason"] == "Failed"
        assert finished["message"] == failed.get("message")

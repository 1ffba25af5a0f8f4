"""The hub chart's pods on a real node: kubelet + containerd joined to a fleet's manager.

Everything that runs is real: the manager's apiserver, controller-manager and scheduler, a
kubelet built from the Kubernetes module, Debian's containerd and runc, the image of
`make image`, helm. In order, on one fleet of its own (a full manager, no workers):

1. `helm install` with 2 replicas: both pods Ready (the kubelet's readiness probes) on the
   real node, not on the kwok node beside it; one of them holds the Lease.
2. A Job created *unsuspended* with a queue label comes back suspended from the create
   call (the apiserver called the mutating webhook through the Service, at the pod's
   endpoint), then the in-cluster hub admits its Workload and starts it.
3. Deleting the leader's pod: the other pod takes the Lease, and a new Job is admitted.
4. `helm upgrade` with a changed log level and a pod annotation: the Deployment rolls
   (new pods Ready, old ones gone) and the new pods run with the new values.
5. `helm uninstall`: Deployment, Services and both webhook configurations are gone.

Opt-in (`make real-node-test`, `pytest -m real_node`): the kubelet is not one of the
tools CI builds by default, and a real node needs containerd (docs/install.md §7).
Without what it needs it is skipped with the fixing command, and fails under CI=true.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from devfleet.chart_install import HUB_NAMESPACE, HUB_RELEASE, helm_uninstall
from devfleet.cluster_access import ClusterAccess
from devfleet.fleet import Fleet
from devfleet.polling import until
from devfleet.real_node import RealNode, RealNodeInfo, image_archive, preflight
from devfleet.real_node_hub import (
    WEBHOOK_CONFIGURATIONS,
    create_queues,
    hub_pods,
    hub_values,
    install_hub,
    lease_holder,
    submit_and_wait_admitted,
    wait_leader,
    wait_rolled_out,
)
from devfleet.real_node_run import start_fleet
from devfleet.toolchain import missing_binaries

pytestmark = [pytest.mark.real_node, pytest.mark.timeout(1800)]
ROLLOUT_TIMEOUT_SECONDS = 300.0
TAKEOVER_TIMEOUT_SECONDS = 90.0


@dataclass(frozen=True)
class Stand:
    fleet: Fleet
    node: RealNodeInfo
    manager: ClusterAccess
    namespace: str


def _cannot_run() -> list[str]:
    problems = preflight(image_archive())
    missing = missing_binaries(["kubernetes", "etcd", "kwok", "helm"])
    if missing:
        problems.append("fleet tools not built (" + ", ".join(missing) + "): run `make tools`")
    return problems


@pytest.fixture(scope="module")
def stand(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stand]:
    problems = _cannot_run()
    if problems:
        message = "a real node cannot run here:\n  " + "\n  ".join(problems)
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    fleet = start_fleet(f"realnode-{os.getpid()}", print)
    node = RealNode(fleet)
    try:
        info = node.up(image_archive(), progress=print)
        manager = fleet.access().manager
        install_hub(manager, hub_values(info), tmp_path_factory.mktemp("helm"))
        namespace = f"real-node-{uuid.uuid4().hex[:6]}"
        from kubernetes import client

        with manager.api_client() as api_client:
            client.CoreV1Api(api_client).create_namespace({"metadata": {"name": namespace}})
        yield Stand(fleet, info, manager, namespace)
    finally:
        print(node.kubelet.log_tail(grep="E1") if node.kubelet else "(no kubelet)")
        node.down(progress=print)
        fleet.down(progress=print)


def _hub_deployment_args(manager: ClusterAccess) -> list[str]:
    from kubernetes import client

    with manager.api_client() as api_client:
        deployment = client.AppsV1Api(api_client).read_namespaced_deployment(
            HUB_RELEASE, HUB_NAMESPACE
        )
    return list(deployment.spec.template.spec.containers[0].args)


def test_both_hub_pods_are_ready_on_the_real_node_and_one_holds_the_lease(stand: Stand) -> None:
    from kubernetes import client

    with stand.manager.api_client() as api_client:
        nodes = {n.metadata.name: n for n in client.CoreV1Api(api_client).list_node().items}
    # The real node is the kubelet's (kwok, which would report kwok-0.8.0, left it alone),
    # beside the fleet's kwok node.
    info = nodes[stand.node.name].status.node_info
    assert info.kubelet_version == "v1.36.3"
    assert info.container_runtime_version.startswith("containerd://")
    assert any((n.metadata.annotations or {}).get("kwok.x-k8s.io/node") for n in nodes.values())
    pods = wait_rolled_out(stand.manager, 2, timeout=ROLLOUT_TIMEOUT_SECONDS)
    assert len(pods) == 2
    assert {pod.node for pod in pods} == {stand.node.name}, pods
    # Pod IPs from the node's CNI bridge, not the host's address: real pod networking.
    assert all(pod.ip.startswith("10.244.77.") for pod in pods), pods
    names = {pod.name for pod in pods}
    leader = wait_leader(stand.manager, lambda holder: holder in names, timeout=60)
    assert leader in names


def test_a_job_is_suspended_by_the_webhook_and_admitted_by_the_in_cluster_hub(
    stand: Stand,
) -> None:
    # Creating the queues already went through the validating webhook (failurePolicy Fail).
    create_queues(stand.manager, stand.namespace, uuid.uuid4().hex[:6])
    job = submit_and_wait_admitted(stand.manager, stand.namespace)
    assert job.suspended_on_create, "the create answer was not mutated: no webhook call"
    assert job.admitted_by.startswith("real-node-cq-")


def test_deleting_the_leader_moves_the_lease_and_jobs_are_still_admitted(stand: Stand) -> None:
    from kubernetes import client

    pods = wait_rolled_out(stand.manager, 2, timeout=ROLLOUT_TIMEOUT_SECONDS)
    leader = wait_leader(stand.manager, lambda holder: holder in {p.name for p in pods}, timeout=60)
    (standby,) = [pod.name for pod in pods if pod.name != leader]
    with stand.manager.api_client() as api_client:
        client.CoreV1Api(api_client).delete_namespaced_pod(leader, HUB_NAMESPACE)
    assert wait_leader(
        stand.manager, lambda holder: holder == standby, timeout=TAKEOVER_TIMEOUT_SECONDS
    )
    job = submit_and_wait_admitted(stand.manager, stand.namespace)
    assert job.suspended_on_create
    # The ReplicaSet replaced the deleted pod; both Ready again on the real node.
    pods = wait_rolled_out(stand.manager, 2, timeout=ROLLOUT_TIMEOUT_SECONDS)
    assert leader not in {pod.name for pod in pods}
    assert lease_holder(stand.manager) == standby


def test_helm_upgrade_rolls_the_hub_to_new_ready_pods(stand: Stand) -> None:
    before = wait_rolled_out(stand.manager, 2, timeout=ROLLOUT_TIMEOUT_SECONDS)
    values = hub_values(stand.node, log_level="debug", pod_annotations={"fleetq.dev/rev": "2"})
    install_hub(stand.manager, values, stand.fleet.dir / "helm-upgrade")
    after = wait_rolled_out(stand.manager, 2, timeout=ROLLOUT_TIMEOUT_SECONDS)
    assert not {p.name for p in before} & {p.name for p in after}, (before, after)
    assert {p.template_hash for p in after} != {p.template_hash for p in before}
    assert "--log-level=debug" in _hub_deployment_args(stand.manager)
    names = {pod.name for pod in after}
    assert wait_leader(stand.manager, lambda holder: holder in names, timeout=60)
    assert submit_and_wait_admitted(stand.manager, stand.namespace).suspended_on_create


def test_helm_uninstall_removes_the_deployment_services_and_webhooks(stand: Stand) -> None:
    from kubernetes import client

    helm_uninstall(stand.manager, HUB_RELEASE, HUB_NAMESPACE)
    with stand.manager.api_client() as api_client:
        apps = client.AppsV1Api(api_client)
        core = client.CoreV1Api(api_client)
        registration = client.AdmissionregistrationV1Api(api_client)
        deployments = apps.list_namespaced_deployment(HUB_NAMESPACE).items
        services = core.list_namespaced_service(
            HUB_NAMESPACE, label_selector=f"app.kubernetes.io/instance={HUB_RELEASE}"
        ).items
        mutating = {
            w.metadata.name for w in registration.list_mutating_webhook_configuration().items
        }
        validating = {
            w.metadata.name for w in registration.list_validating_webhook_configuration().items
        }
    assert [d.metadata.name for d in deployments] == []
    assert [s.metadata.name for s in services] == []
    assert not set(WEBHOOK_CONFIGURATIONS) & (mutating | validating)
    until(
        lambda: not hub_pods(stand.manager, include_terminating=True) or None,
        "the hub pods to be gone",
        timeout=120,
    )

"""`fleetq join` on real apiservers: the lite fleet's manager and its two workers.

Each test writes its own fleet file (unique hub namespace, identity, worker and config
names) pointing at the fleet's kubeconfig files, joins, and checks the clusters with plain
REST. The minted kubeconfig is proven twice: the hub's own Secret reader accepts it, and a
client built from it may list Workloads on its worker but is refused Secrets. Cluster-scoped
objects made by join are deleted after each test.
"""

from __future__ import annotations

import base64
import json
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.join.apply_outcome import Outcome
from cli.join.fleet_file import FleetFile, load_fleet_file
from cli.join.join_report import JoinReport, TokenAction
from cli.join.join_run import JoinOptions, run_join
from cli.join.token_rotation import MintReason
from cli.main import main
from core.api.codec import decode
from core.api.multikueue import MultiKueueCluster
from devfleet.cluster_access import ClusterAccess, RunningFleet
from hub.multikueue.connections.kubeconfig_source import resolve_kubeconfig

KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
LIFETIME = timedelta(hours=1)


@dataclass
class JoinSetup:
    """One test's fleet file and the names in it."""

    path: Path
    suffix: str
    hub_namespace: str
    identity_namespace: str
    account: str
    workers: dict[str, ClusterAccess]
    """Worker name in the file → the fleet cluster it is."""
    config: str
    mirror_namespace: str

    @property
    def role(self) -> str:
        return f"{self.identity_namespace}:{self.account}"

    def secret_path(self, worker: str) -> str:
        return f"/api/v1/namespaces/{self.hub_namespace}/secrets/{worker}-kubeconfig"

    def load(self) -> FleetFile:
        return load_fleet_file(self.path)


SetupFactory = Callable[..., JoinSetup]


def current_context(access: ClusterAccess) -> str:
    return str(yaml.safe_load(access.kubeconfig.read_text())["current-context"])


@pytest.fixture
def join_setup(
    kueue_crds: RunningFleet, kube_rest: dict[str, Any], tmp_path: Path
) -> Iterator[SetupFactory]:
    made: list[JoinSetup] = []

    def make(*, file_name: str = "clusters.yaml") -> JoinSetup:
        suffix = uuid.uuid4().hex[:6]
        fleet = kueue_crds
        workers = {f"w{index}-{suffix}": w for index, w in enumerate(fleet.workers, start=1)}
        names = list(workers)
        setup = JoinSetup(
            path=tmp_path / file_name,
            suffix=suffix,
            hub_namespace=f"hub-{suffix}",
            identity_namespace=f"fq-{suffix}",
            account=f"mk-{suffix}",
            workers=workers,
            config=f"cfg-{suffix}",
            mirror_namespace=f"team-{suffix}",
        )
        document = {
            "apiVersion": "fleetq.dev/v1alpha1",
            "kind": "Fleet",
            "manager": {
                "kubeconfig": str(fleet.manager.kubeconfig),
                "context": current_context(fleet.manager),
                "namespace": setup.hub_namespace,
            },
            "identity": {
                "namespace": setup.identity_namespace,
                "serviceAccount": setup.account,
                "tokenLifetime": f"{int(LIFETIME.total_seconds())}s",
                "rotateBefore": "10m",
            },
            "workers": [
                {
                    "name": name,
                    "kubeconfig": str(access.kubeconfig),
                    "context": current_context(access),
                }
                for name, access in workers.items()
            ],
            "mirror": [
                {
                    "namespace": setup.mirror_namespace,
                    "localQueues": [{"name": "user-queue", "clusterQueue": f"cq-{suffix}"}],
                }
            ],
            "dispatch": {"configs": [{"name": setup.config, "workers": names[::-1]}]},
        }
        setup.path.write_text(yaml.safe_dump(document, sort_keys=False))
        made.append(setup)
        return setup

    yield make
    manager = kube_rest["manager"]
    for setup in made:
        for name in setup.workers:
            manager.delete(f"{KUEUE}/multikueueclusters/{name}")
        manager.delete(f"{KUEUE}/multikueueconfigs/{setup.config}")
        manager.delete(f"{KUEUE}/admissionchecks/{setup.config}")
        manager.delete(f"/api/v1/namespaces/{setup.hub_namespace}")
        for access in setup.workers.values():
            rest = kube_rest[access.name]
            rest.delete(f"{RBAC}/clusterrolebindings/{setup.role}")
            rest.delete(f"{RBAC}/clusterroles/{setup.role}")
            rest.delete(f"/api/v1/namespaces/{setup.identity_namespace}")
            rest.delete(f"/api/v1/namespaces/{setup.mirror_namespace}")


def edit(setup: JoinSetup, change: Callable[[dict[str, Any]], None]) -> None:
    """Change the test's fleet file in place."""
    document = yaml.safe_load(setup.path.read_text())
    change(document)
    setup.path.write_text(yaml.safe_dump(document, sort_keys=False))


def join(setup: JoinSetup, **options: Any) -> JoinReport:
    report = run_join(setup.load(), JoinOptions(**options))
    assert report.ok, [notice.text for notice in report.errors]
    return report


def exists(rest: Any, path: str) -> bool:
    try:
        rest.get(path)
    except rest.Error as error:
        if error.status == 404:
            return False
        raise
    return True


def stored_kubeconfig(kube_rest: dict[str, Any], setup: JoinSetup, worker: str) -> str:
    secret = kube_rest["manager"].get(setup.secret_path(worker))
    return base64.b64decode(secret["data"]["kubeconfig"]).decode()


def api_client_from(kubeconfig_text: str) -> Any:
    from kubernetes import config

    return config.new_client_from_config_dict(yaml.safe_load(kubeconfig_text))


def test_join_sets_up_workers_and_manager_and_a_rerun_changes_nothing(
    join_setup: SetupFactory, kube_rest: dict[str, Any]
) -> None:
    setup = join_setup()
    before = datetime.now(UTC)
    first = join(setup)
    names = list(setup.workers)
    assert {token.worker: token.action for token in first.tokens} == {
        name: TokenAction.MINTED for name in names
    }
    assert not [result for result in first.objects if result.outcome is Outcome.CHANGED]

    manager = kube_rest["manager"]
    assert manager.get(f"{KUEUE}/multikueueconfigs/{setup.config}")["spec"] == {
        "clusters": names[::-1]
    }
    check = manager.get(f"{KUEUE}/admissionchecks/{setup.config}")["spec"]
    assert check["controllerName"] == "kueue.x-k8s.io/multikueue"
    assert check["parameters"]["name"] == setup.config
    for name, access in setup.workers.items():
        cluster = manager.get(f"{KUEUE}/multikueueclusters/{name}")
        assert cluster["spec"]["clusterSource"]["kubeConfig"] == {
            "location": f"{name}-kubeconfig",
            "locationType": "Secret",
        }
        secret = manager.get(setup.secret_path(name))
        expires = datetime.fromisoformat(
            secret["metadata"]["annotations"]["fleetq.dev/token-expires-at"]
        )
        assert before + LIFETIME - timedelta(minutes=1) <= expires <= before + LIFETIME * 2

        # The hub reads it exactly as it would at run time, and accepts it.
        accepted = resolve_kubeconfig(
            decode(MultiKueueCluster, json.dumps(cluster).encode()),
            secrets=lambda secret_name: manager.get(
                f"/api/v1/namespaces/{setup.hub_namespace}/secrets/{secret_name}"
            ),
            namespace=setup.hub_namespace,
        )
        document = accepted.document
        assert document["clusters"][0]["cluster"]["server"] == access.server
        assert set(document["users"][0]["user"]) == {"token"}

        worker = kube_rest[access.name]
        assert worker.get(
            f"/api/v1/namespaces/{setup.identity_namespace}/serviceaccounts/{setup.account}"
        )
        assert worker.get(f"{RBAC}/clusterroles/{setup.role}")["rules"]
        binding = worker.get(f"{RBAC}/clusterrolebindings/{setup.role}")
        assert binding["subjects"][0]["name"] == setup.account
        queue = worker.get(f"{KUEUE}/namespaces/{setup.mirror_namespace}/localqueues/user-queue")
        assert queue["spec"]["clusterQueue"] == f"cq-{setup.suffix}"
    missing_queue = [n.text for n in first.notices if f"cq-{setup.suffix}" in n.text]
    assert len(missing_queue) == 2  # one warning per worker: join never creates ClusterQueues

    second = join(setup)
    assert second.objects and {r.outcome for r in second.objects} == {Outcome.UNCHANGED}
    assert {token.action for token in second.tokens} == {TokenAction.KEPT}
    assert second.rotated == []


def test_the_minted_kubeconfig_works_for_its_role_and_is_refused_outside_it(
    join_setup: SetupFactory, kube_rest: dict[str, Any]
) -> None:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    setup = join_setup()
    join(setup)
    name, access = next(iter(setup.workers.items()))
    with api_client_from(stored_kubeconfig(kube_rest, setup, name)) as api:
        custom = client.CustomObjectsApi(api)
        listed = custom.list_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "workloads")
        assert listed["kind"] == "WorkloadList"
        assert client.BatchV1Api(api).list_namespaced_job(setup.mirror_namespace).items == []
        with pytest.raises(ApiException) as refused:
            client.CoreV1Api(api).list_namespaced_secret(setup.identity_namespace)
        assert refused.value.status == 403
        # Manager quota automation may list the worker's queues, never change them.
        queues = custom.list_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "clusterqueues")
        assert queues["kind"] == "ClusterQueueList"
        with pytest.raises(ApiException) as refused_queues:
            custom.delete_cluster_custom_object(
                "kueue.x-k8s.io", "v1beta2", "clusterqueues", "any-queue"
            )
        assert refused_queues.value.status == 403
        with pytest.raises(ApiException) as refused_flavors:
            custom.list_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "resourceflavors")
        assert refused_flavors.value.status == 403
    # The token means nothing on another worker: each cluster signs its own tokens.
    other = yaml.safe_load(list(setup.workers.values())[1].kubeconfig.read_text())
    elsewhere = yaml.safe_load(stored_kubeconfig(kube_rest, setup, name))
    elsewhere["clusters"][0]["cluster"] = other["clusters"][0]["cluster"]
    with api_client_from(yaml.safe_dump(elsewhere)) as api:
        with pytest.raises(ApiException) as unknown:
            client.BatchV1Api(api).list_namespaced_job(setup.mirror_namespace)
        assert unknown.value.status == 401
    assert access.name != list(setup.workers.values())[1].name


def test_dry_run_changes_nothing_and_shows_the_plan(
    join_setup: SetupFactory, kube_rest: dict[str, Any]
) -> None:
    setup = join_setup()
    plan = join(setup, dry_run=True)
    assert plan.objects and {r.outcome for r in plan.objects} == {Outcome.CREATED}
    assert {token.action for token in plan.tokens} == {TokenAction.WOULD_MINT}
    manager = kube_rest["manager"]
    assert not exists(manager, f"/api/v1/namespaces/{setup.hub_namespace}")
    assert not exists(manager, f"{KUEUE}/multikueueconfigs/{setup.config}")
    for name, access in setup.workers.items():
        assert not exists(manager, f"{KUEUE}/multikueueclusters/{name}")
        worker = kube_rest[access.name]
        assert not exists(worker, f"/api/v1/namespaces/{setup.identity_namespace}")
        assert not exists(worker, f"{RBAC}/clusterroles/{setup.role}")

    join(setup)
    names = list(setup.workers)
    # A new preference order: the plan names the field, the cluster keeps the old one.
    edit(setup, lambda document: document["dispatch"]["configs"][0].update(workers=names))
    plan = join(setup, dry_run=True)
    changes = [r for r in plan.objects if r.outcome is Outcome.CHANGED]
    assert [(r.cluster, r.object, r.fields) for r in changes] == [
        ("manager", f"MultiKueueConfig {setup.config}", ("spec.clusters",))
    ]
    config_path = f"{KUEUE}/multikueueconfigs/{setup.config}"
    assert manager.get(config_path)["spec"]["clusters"] == names[::-1]
    join(setup)
    assert manager.get(config_path)["spec"]["clusters"] == names


def test_rotate_remints_tokens_inside_the_window_and_updates_the_secrets(
    join_setup: SetupFactory, kube_rest: dict[str, Any]
) -> None:
    setup = join_setup()
    join(setup)
    names = list(setup.workers)
    old = {name: stored_kubeconfig(kube_rest, setup, name) for name in names}

    # A plain run with a window longer than the lifetime warns but keeps the tokens.
    warned = join(setup, rotate_before_seconds=int(LIFETIME.total_seconds()) * 2)
    assert {t.action for t in warned.tokens} == {TokenAction.KEPT}
    assert all(t.rotation_due for t in warned.tokens)
    assert len([n for n in warned.notices if "fleetq join --rotate" in n.text]) == 2
    assert {name: stored_kubeconfig(kube_rest, setup, name) for name in names} == old

    rotated = join(setup, rotate=True, rotate_before_seconds=int(LIFETIME.total_seconds()) * 2)
    assert sorted(rotated.rotated) == sorted(names)
    assert {t.reason for t in rotated.tokens} == {MintReason.ROTATION_DUE}
    secrets = [r for r in rotated.objects if r.object.startswith("Secret ")]
    assert {r.outcome for r in secrets} == {Outcome.CHANGED}
    assert all("data.kubeconfig" in r.fields for r in secrets)
    for name, _access in setup.workers.items():
        new = stored_kubeconfig(kube_rest, setup, name)
        assert new != old[name]
        with api_client_from(new) as api:
            from kubernetes import client

            assert client.BatchV1Api(api).list_namespaced_job(setup.mirror_namespace).items == []

    # Tokens outside the window are left alone by --rotate.
    calm = join(setup, rotate=True, rotate_before_seconds=60)
    assert {t.action for t in calm.tokens} == {TokenAction.KEPT}


def test_an_unreachable_worker_is_named_with_its_server_and_nothing_changes(
    join_setup: SetupFactory,
    kube_rest: dict[str, Any],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    setup = join_setup()
    (name, access), (_, healthy) = setup.workers.items()
    bogus = yaml.safe_load(access.kubeconfig.read_text())
    bogus["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"
    bogus_path = tmp_path / "bogus.kubeconfig"
    bogus_path.write_text(yaml.safe_dump(bogus))
    edit(setup, lambda document: document["workers"][0].update(kubeconfig=str(bogus_path)))

    code = main(["join", "-f", str(setup.path)])
    output = " ".join(capsys.readouterr().out.split())
    assert code == 1
    assert f"{name}: cannot reach the API server https://127.0.0.1:1" in output
    assert f"(context {current_context(access)!r})" in output
    assert "Connection refused" in output
    assert not exists(kube_rest["manager"], f"/api/v1/namespaces/{setup.hub_namespace}")
    assert not exists(kube_rest[healthy.name], f"/api/v1/namespaces/{setup.identity_namespace}")


def test_unknown_contexts_and_missing_permissions_are_reported_before_any_change(
    join_setup: SetupFactory, kube_rest: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    setup = join_setup()
    first = next(iter(setup.workers))
    code = main(["join", "-f", str(setup.path), "--context-override", f"{first}=no-such"])
    output = capsys.readouterr().out
    assert code == 1
    assert f"{first}: unknown context 'no-such'" in output
    assert "known: " in output

    # Join once, then use the minted (least-privilege) kubeconfig as a CLI's credentials.
    join(setup)
    weak = setup.path.parent / "weak.kubeconfig"
    weak.write_text(stored_kubeconfig(kube_rest, setup, first))
    limited = join_setup(file_name="limited.yaml")
    limited_worker = next(iter(limited.workers))
    edit(
        limited,
        lambda document: document["workers"][0].update(kubeconfig=str(weak), context=first),
    )
    code = main(["join", "-f", str(limited.path)])
    output = " ".join(capsys.readouterr().out.split())
    assert code == 1
    assert f"{limited_worker}: the credentials of context '{first}' lack permissions" in output
    assert "cannot patch clusterroles.rbac.authorization.k8s.io" in output
    assert f"cannot create serviceaccounts/token in namespace {limited.identity_namespace}" in (
        output
    )
    assert not exists(kube_rest["manager"], f"/api/v1/namespaces/{limited.hub_namespace}")


def test_the_command_prints_a_line_per_step_and_a_summary(
    join_setup: SetupFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    setup = join_setup()
    assert main(["join", "-f", str(setup.path), "--dry-run"]) == 0
    plan = capsys.readouterr().out
    assert "dry run: nothing will change" in plan
    assert f"would create ClusterRole {setup.role}" in plan
    assert "join plan (dry run: nothing changed)" in plan
    assert main(["join", "-f", str(setup.path)]) == 0
    first = capsys.readouterr().out
    assert f"created      MultiKueueConfig {setup.config}" in first
    assert "minted" in first and "join summary" in first
    assert main(["join", "-f", str(setup.path)]) == 0
    again = capsys.readouterr().out
    assert not re.search(r"^\S+\s+(created|changed)\s", again, re.MULTILINE)
    print(plan, first, again)
    assert f"unchanged    MultiKueueConfig {setup.config}" in again

"""The LeaderWorkerSet controller on the launcher: its Configuration and flags, its CRD
and webhooks read from the module (the Pod webhooks scoped to LWS Pods), and the
readiness probe's test for its defaulting webhook."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

from devfleet.operators import catalog
from devfleet.operators.lws import LWS, defaulted_by_webhook, probe_leaderworkerset
from devfleet.operators.process import crd_files, operator_module_dir
from devfleet.operators.spec import Launch
from devfleet.operators.webhook_manifests import (
    kustomized_webhook_manifests,
    local_webhook_configurations,
)


def _launch(tmp_path: Path) -> Launch:
    return Launch(
        kubeconfig=tmp_path / "kubeconfig",
        workdir=tmp_path,
        cert_dir=tmp_path / "certs",
        ports={"webhook": 21001, "health": 21002, "metrics": 21003},
        module_dir=Path("/m"),
        qps=20,
        burst=40,
    )


def test_it_runs_without_leader_election_or_cert_management_on_loopback(tmp_path: Path) -> None:
    argv = LWS.command(_launch(tmp_path))
    assert "--leader-elect=false" in argv
    assert f"--kubeconfig={tmp_path / 'kubeconfig'}" in argv
    config = yaml.safe_load((tmp_path / "config.yaml").read_text())
    assert config["apiVersion"] == "config.lws.x-k8s.io/v1alpha1"
    assert config["leaderElection"] == {"leaderElect": False}
    assert config["internalCertManagement"] == {"enable": False}
    assert config["webhook"] == {
        "host": "127.0.0.1",
        "port": 21001,
        "certDir": str(tmp_path / "certs"),
    }
    assert config["health"]["healthProbeBindAddress"] == "127.0.0.1:21002"
    assert config["metrics"]["bindAddress"] == "127.0.0.1:21003"


def test_its_crd_and_webhooks_come_from_the_module_with_pod_hooks_for_lws_pods_only() -> None:
    module = operator_module_dir(LWS)
    assert [p.name for p in crd_files(module / LWS.crd_dirs[0])] == [
        "leaderworkerset.x-k8s.io_leaderworkersets.yaml"
    ]
    assert LWS.webhook_dir is not None
    manifests = kustomized_webhook_manifests(module / LWS.webhook_dir)
    configurations = local_webhook_configurations(
        manifests, port=21001, ca_bundle=b"ca", prefix=LWS.webhook_prefix
    )
    assert [c["metadata"]["name"] for c in configurations] == [
        "fleetq-lws-mutating",
        "fleetq-lws-validating",
    ]
    hooks = {w["name"]: w for c in configurations for w in c["webhooks"]}
    assert hooks["mleaderworkerset.kb.io"]["clientConfig"]["url"] == (
        "https://127.0.0.1:21001/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset"
    )
    for name in ("mpod.kb.io", "vpod.kb.io"):
        assert hooks[name]["objectSelector"] == {
            "matchExpressions": [{"key": "leaderworkerset.sigs.k8s.io/name", "operator": "Exists"}]
        }


def test_defaulting_is_recognised_only_when_the_webhook_ran() -> None:
    probe = probe_leaderworkerset("p")
    assert not defaulted_by_webhook(probe)
    half = copy.deepcopy(probe)
    half["spec"]["leaderWorkerTemplate"]["restartPolicy"] = "RecreateGroupOnPodRestart"
    assert not defaulted_by_webhook(half)  # the network configuration is still missing
    half["spec"]["networkConfig"] = {"subdomainPolicy": "Shared"}
    assert defaulted_by_webhook(half)


def test_every_full_fleet_runs_it() -> None:
    assert catalog.OPERATORS["lws"] is LWS
    assert [o.name for o in catalog.resolve(["lws"])] == ["lws"]

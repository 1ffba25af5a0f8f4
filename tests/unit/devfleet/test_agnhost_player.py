"""The agnhost player's pure parts: what netexec answers, the stages that end or keep pods,
and the kwok exec document (the stages running on a real kwok: tests/e2e, the conformance run)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from devfleet.agnhost_player import (
    EXIT_CODE_ANNOTATION,
    EXIT_STAGE,
    CurlFailure,
    answer,
    exec_documents,
    exit_fast_stage,
    keep_serving_pods_running,
    main,
    termination_stages,
)


def pod(args: list[str] | None, name: str = "p") -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "agnhost:2.66.0"}
    if args is not None:
        container["args"] = args
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": {"containers": [container]}}


def test_netexec_answers_readiness_and_its_name_and_exits_with_the_code_asked() -> None:
    netexec = pod(["netexec"], name="job-0-abc")
    assert answer("http://10.0.0.5:8080/readyz", netexec) == ("ok", None)
    assert answer("http://10.0.0.5:8080/hostname", netexec) == ("job-0-abc", None)
    assert answer("http://10.0.0.5:8080/exit?code=3&timeout=2s&wait=2s", netexec) == ("", 3)
    assert answer("http://10.0.0.5:8080/exit", netexec) == ("", 0)


@pytest.mark.parametrize(
    ("url", "target", "code", "says"),
    [
        ("http://10.0.0.9:8080/readyz", None, 7, "no pod has this IP"),
        ("http://10.0.0.5:8080/readyz", pod(["entrypoint-tester"]), 7, "Connection refused"),
        ("http://10.0.0.5:8080/readyz", pod(None), 7, "Connection refused"),
        ("http://10.0.0.5:9090/readyz", pod(["netexec"]), 7, "Connection refused"),
        ("http://10.0.0.5:8080/exit?code=x", pod(["netexec"]), 22, "code='x'"),
        ("http://10.0.0.5:8080/exit?code=300", pod(["netexec"]), 22, "code=300"),
        ("http://10.0.0.5:8080/shell?cmd=ls", pod(["netexec"]), 22, "/shell is not played"),
    ],
)
def test_what_no_netexec_would_answer_fails_as_curl_does(
    url: str, target: dict[str, Any] | None, code: int, says: str
) -> None:
    with pytest.raises(CurlFailure, match=says) as failure:
        answer(url, target)
    assert failure.value.code == code


def test_a_curl_without_a_url_is_refused_before_any_cluster_call(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["-s"]) == 2
    assert "no URL given" in capsys.readouterr().err


def test_serving_pods_are_left_running_by_kwoks_pod_complete_stage() -> None:
    stage = {"spec": {"selector": {"matchExpressions": [{"key": ".status.phase"}]}}}
    keep_serving_pods_running(stage)
    keep_serving_pods_running(stage)  # once only
    expressions = stage["spec"]["selector"]["matchExpressions"]
    assert expressions[1:] == [
        {
            "key": ".spec.containers[0].args[0]",
            "operator": "NotIn",
            "values": ["netexec", "test-webserver"],
        }
    ]


def test_the_exit_stage_ends_only_running_pods_told_to_exit_with_their_code() -> None:
    spec = EXIT_STAGE["spec"]
    keys = {e["key"]: e for e in spec["selector"]["matchExpressions"]}
    assert keys[f'.metadata.annotations["{EXIT_CODE_ANNOTATION}"]']["operator"] == "Exists"
    assert keys[".status.phase"]["values"] == ["Running"]
    template = spec["next"]["statusTemplate"]
    assert "exitCode: {{ $code }}" in template
    assert 'phase: {{ if eq $code "0" }}Succeeded{{ else }}Failed{{ end }}' in template


def test_the_exec_document_puts_the_shim_first_on_path_and_names_the_cluster(
    tmp_path: Path,
) -> None:
    (document,) = [json.loads(d) for d in exec_documents(tmp_path / "m.kubeconfig", tmp_path)]
    assert document["kind"] == "ClusterExec"
    envs = {e["name"]: e["value"] for e in document["spec"]["execs"][0]["local"]["envs"]}
    assert envs["KUBECONFIG"] == str(tmp_path / "m.kubeconfig")
    shim_dir = envs["PATH"].split(":")[0]
    shim = Path(shim_dir) / "curl"
    assert os.access(shim, os.X_OK)
    done = subprocess.run(  # the shim runs this module: no URL, refused before any cluster call
        ["/bin/sh", "-c", "curl -s"],
        env={**os.environ, "PATH": envs["PATH"]},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "no URL given" in done.stderr


def test_entrypoint_tester_pods_finish_whoever_owns_them() -> None:
    owner_key = ".metadata.ownerReferences.[].kind"
    complete = {
        "metadata": {"name": "pod-complete"},
        "spec": {
            "selector": {
                "matchExpressions": [
                    {"key": ".status.phase", "operator": "In", "values": ["Running"]},
                    {"key": owner_key, "operator": "In", "values": ["Job"]},
                ]
            },
            "next": {"statusTemplate": "phase: Succeeded"},
        },
    }
    keep_serving_pods_running(complete)
    stage = exit_fast_stage(complete, owner_key)
    keys = {e["key"]: e for e in stage["spec"]["selector"]["matchExpressions"]}
    assert owner_key not in keys
    assert keys[".spec.containers[0].args[0]"] == {
        "key": ".spec.containers[0].args[0]",
        "operator": "In",
        "values": ["entrypoint-tester"],
    }
    assert stage["metadata"]["name"] == "fleetq-agnhost-exit-fast"
    # kwok's completion, then the conditions a kubelet writes for a succeeded pod
    from devfleet.agnhost_player import terminal_conditions

    template = stage["spec"]["next"]["statusTemplate"]
    assert template == "phase: Succeeded\n" + terminal_conditions("true")
    assert complete["spec"]["next"]["statusTemplate"] == "phase: Succeeded"  # not changed
    assert len(complete["spec"]["selector"]["matchExpressions"]) == 3  # not changed


def test_a_deleted_serving_pod_held_by_a_finalizer_ends_as_its_container_would() -> None:
    stages = {s["metadata"]["name"]: s for s in termination_stages()}
    netexec = stages["fleetq-agnhost-netexec-terminate"]["spec"]
    webserver = stages["fleetq-agnhost-test-webserver-terminate"]["spec"]
    keys = {e["key"]: e for e in netexec["selector"]["matchExpressions"]}
    assert keys[".metadata.deletionTimestamp"]["operator"] == "Exists"
    assert keys[".metadata.finalizers"]["operator"] == "Exists"  # else kwok deletes it
    assert keys[".spec.containers[0].args[0]"]["values"] == ["netexec"]
    assert "phase: Succeeded" in netexec["next"]["statusTemplate"]
    assert "exitCode: 0" in netexec["next"]["statusTemplate"]
    assert "phase: Failed" in webserver["next"]["statusTemplate"]
    assert "exitCode: 137" in webserver["next"]["statusTemplate"]


def test_an_ended_pod_gets_the_conditions_a_kubelet_writes_for_its_phase() -> None:
    from devfleet.agnhost_player import _terminated_status, terminal_conditions

    succeeded = terminal_conditions("true")
    assert [line for line in succeeded.splitlines() if line.startswith("- type:")] == [
        "- type: PodReadyToStartContainers",
        "- type: Initialized",
        "- type: Ready",
        "- type: ContainersReady",
        "- type: PodScheduled",
    ]
    assert 'reason: "{{ if true }}PodCompleted{{ else }}PodFailed{{ end }}"' in succeeded
    assert terminal_conditions('eq $code "0"') in EXIT_STAGE["spec"]["next"]["statusTemplate"]
    assert terminal_conditions("false") in _terminated_status(137)

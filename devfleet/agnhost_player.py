"""kwok playing upstream's agnhost test image as a kubelet running it would.

Upstream's e2e specs run their pods from one image, agnhost, with a subcommand as the
first argument (test/util/constants.go): `entrypoint-tester` exits 0 at once, `netexec`
serves HTTP on 8080 until it is deleted or told to exit (`GET /exit?code=N`),
`test-webserver` serves until deleted. Their helpers end a `netexec` pod by exec-ing
`curl "http://<pod IP>:8080/exit?code=N..."` inside it (`util.WaitForActivePodsAndTerminate`).

On kwok nothing runs, so a fleet plays those parts (docs/conformance.md):

- stages (devfleet.kwok_stages): a `netexec`/`test-webserver` pod is never finished by
  kwok's pod-complete stage (it runs until deleted, as the real container would), an
  `entrypoint-tester` pod finishes whoever owns it (`exit_fast_stage`), a deleted serving
  pod held by a finalizer ends as its container does on SIGTERM (`termination_stages`:
  netexec Succeeded, test-webserver Failed), and a pod
  carrying `EXIT_CODE_ANNOTATION` ends with that exit code (Succeeded for 0, Failed
  otherwise) — the container's exit after `/exit`;
- `exec_documents` (opt-in: `Fleet.up(kubelet_exec=True)`): a kwok `ClusterExec` runs
  `kubectl exec` commands on this machine with a PATH whose `curl` is this module's
  `main`, which answers netexec's `/readyz`, `/healthz`, `/hostname` for the pod with
  that IP and turns `/exit?code=N` into the annotation. Any other command runs as the
  machine's own: only for fleets that serve nothing but a local test suite.
"""

from __future__ import annotations

import copy
import json
import os
import sys
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

EXIT_CODE_ANNOTATION: Final = "fleetq.dev/agnhost-exit-code"
"""Set on a pod whose agnhost `netexec` was asked to exit; kwok then ends the pod."""
SERVING_SUBCOMMANDS: Final = ("netexec", "test-webserver")
"""agnhost subcommands that run until the pod is deleted (or, netexec, told to exit)."""
EXITING_SUBCOMMANDS: Final = ("entrypoint-tester",)
"""agnhost subcommands that exit 0 at once, whoever owns the pod."""
NETEXEC_PORT: Final = 8080
_FIRST_ARG_KEY = ".spec.containers[0].args[0]"
SHIM_DIR: Final = "kubelet-exec/bin"
"""Under the fleet's state directory: the `curl` kwok's exec finds first on its PATH."""


def terminal_conditions(succeeded: str) -> str:
    """The pod conditions a kubelet writes when a pod's containers have ended (v1.36's
    pkg/kubelet/status/generate.go): sandbox gone, initialized, neither ready, reason
    `PodCompleted` or `PodFailed`; still scheduled. `succeeded` is a Go-template test
    (`eq $code "0"`, or `true`/`false`). A kwok status template's list replaces the pod's
    whole `conditions`, so PodScheduled is written again (with the time of the write)."""
    reason = f"{{{{ if {succeeded} }}}}PodCompleted{{{{ else }}}}PodFailed{{{{ end }}}}"
    entries = [
        ("PodReadyToStartContainers", "False", None),
        ("Initialized", "True", f"{{{{ if {succeeded} }}}}PodCompleted{{{{ end }}}}"),
        ("Ready", "False", reason),
        ("ContainersReady", "False", reason),
        ("PodScheduled", "True", None),
    ]
    lines = ["conditions:"]
    for kind, status, why in entries:
        lines += [f"- type: {kind}", f'  status: "{status}"']
        if why is not None:
            lines.append(f'  reason: "{why}"')
        lines.append("  lastTransitionTime: {{ $now | Quote }}")
    return "\n".join(lines) + "\n"


EXIT_STAGE: Final[dict[str, Any]] = {
    "apiVersion": "kwok.x-k8s.io/v1alpha1",
    "kind": "Stage",
    "metadata": {"name": "fleetq-agnhost-exit"},
    "spec": {
        "resourceRef": {"apiGroup": "v1", "kind": "Pod"},
        "selector": {
            "matchExpressions": [
                {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"},
                {"key": ".status.phase", "operator": "In", "values": ["Running"]},
                {
                    "key": f'.metadata.annotations["{EXIT_CODE_ANNOTATION}"]',
                    "operator": "Exists",
                },
            ]
        },
        "next": {
            "delete": False,
            "statusTemplate": (
                "{{ $now := Now }}\n"
                f'{{{{ $code := index .metadata.annotations "{EXIT_CODE_ANNOTATION}" }}}}\n'
                "containerStatuses:\n"
                "{{ range $index, $item := .spec.containers }}\n"
                "- image: {{ $item.image | Quote }}\n"
                "  name: {{ $item.name | Quote }}\n"
                "  ready: false\n"
                "  restartCount: 0\n"
                "  started: false\n"
                "  state:\n"
                "    terminated:\n"
                "      exitCode: {{ $code }}\n"
                "      finishedAt: {{ $now | Quote }}\n"
                '      reason: {{ if eq $code "0" }}Completed{{ else }}Error{{ end }}\n'
                "      startedAt: {{ $now | Quote }}\n"
                "{{ end }}\n"
                'phase: {{ if eq $code "0" }}Succeeded{{ else }}Failed{{ end }}\n'
                + terminal_conditions('eq $code "0"')
            ),
        },
    },
}


TERMINATION_EXIT_CODES: Final = {"netexec": 0, "test-webserver": 137}
"""How a serving agnhost container ends when its pod is deleted: netexec handles SIGTERM
and exits 0; test-webserver has no handler and is killed (upstream: "always ends in
failure on deletion")."""


def _terminated_status(code: int) -> str:
    phase = "Succeeded" if code == 0 else "Failed"
    reason = "Completed" if code == 0 else "Error"
    return (
        "{{ $now := Now }}\n"
        "containerStatuses:\n"
        "{{ range $index, $item := .spec.containers }}\n"
        "- image: {{ $item.image | Quote }}\n"
        "  name: {{ $item.name | Quote }}\n"
        "  ready: false\n"
        "  restartCount: 0\n"
        "  started: false\n"
        "  state:\n"
        "    terminated:\n"
        f"      exitCode: {code}\n"
        "      finishedAt: {{ $now | Quote }}\n"
        f"      reason: {reason}\n"
        "      startedAt: {{ $now | Quote }}\n"
        "{{ end }}\n"
        f"phase: {phase}\n" + terminal_conditions("true" if code == 0 else "false")
    )


def termination_stages() -> list[dict[str, Any]]:
    """A deleted serving agnhost pod that something still holds by a finalizer (Kueue's,
    a Job's) ends as its container would on SIGTERM, as a kubelet reports it; kwok's
    pod-delete stage removes it once the finalizers are gone."""
    return [
        {
            "apiVersion": "kwok.x-k8s.io/v1alpha1",
            "kind": "Stage",
            "metadata": {"name": f"fleetq-agnhost-{subcommand}-terminate"},
            "spec": {
                "resourceRef": {"apiGroup": "v1", "kind": "Pod"},
                "selector": {
                    "matchExpressions": [
                        {"key": ".metadata.deletionTimestamp", "operator": "Exists"},
                        {"key": ".metadata.finalizers", "operator": "Exists"},
                        {"key": ".status.phase", "operator": "In", "values": ["Running"]},
                        {"key": _FIRST_ARG_KEY, "operator": "In", "values": [subcommand]},
                    ]
                },
                "delay": {"durationMilliseconds": 1000},
                "next": {"delete": False, "statusTemplate": _terminated_status(code)},
            },
        }
        for subcommand, code in TERMINATION_EXIT_CODES.items()
    ]


def keep_serving_pods_running(pod_complete_stage: dict[str, Any]) -> dict[str, Any]:
    """kwok's pod-complete stage minus pods whose agnhost subcommand serves until deleted."""
    expressions = pod_complete_stage["spec"]["selector"]["matchExpressions"]
    if not any(e.get("key") == _FIRST_ARG_KEY for e in expressions):
        expressions.append(
            {"key": _FIRST_ARG_KEY, "operator": "NotIn", "values": list(SERVING_SUBCOMMANDS)}
        )
    return pod_complete_stage


def exit_fast_stage(pod_complete_stage: dict[str, Any], owner_key: str) -> dict[str, Any]:
    """kwok's pod-complete stage for pods of an exiting agnhost subcommand, whatever owns
    them (kwok's own stage finishes only pods a Job or a listed kind owns), ending with the
    conditions a kubelet writes for a succeeded pod (kwok's leaves the running ones)."""
    stage = copy.deepcopy(pod_complete_stage)
    stage["metadata"] = {"name": "fleetq-agnhost-exit-fast"}
    template = stage["spec"]["next"]["statusTemplate"]
    if "conditions:" not in template:
        stage["spec"]["next"]["statusTemplate"] = (
            template.rstrip("\n") + "\n" + terminal_conditions("true")
        )
    expressions = [
        e
        for e in stage["spec"]["selector"]["matchExpressions"]
        if e.get("key") not in (owner_key, _FIRST_ARG_KEY)
    ]
    expressions.append(
        {"key": _FIRST_ARG_KEY, "operator": "In", "values": list(EXITING_SUBCOMMANDS)}
    )
    stage["spec"]["selector"]["matchExpressions"] = expressions
    return stage


def exec_documents(kubeconfig: Path, state_dir: Path) -> list[str]:
    """The kwokctl config document that lets `kubectl exec` reach `main` for one cluster
    (its admin `kubeconfig`, which the shim uses to find the pod by IP)."""
    shim_dir = write_shim(state_dir)
    document = {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "ClusterExec",
        "metadata": {"name": "fleetq-agnhost"},
        "spec": {
            "execs": [
                {
                    "local": {
                        "envs": [
                            {"name": "PATH", "value": f"{shim_dir}:{os.environ.get('PATH', '')}"},
                            {"name": "KUBECONFIG", "value": str(kubeconfig)},
                        ]
                    }
                }
            ]
        },
    }
    return [json.dumps(document)]


def write_shim(state_dir: Path) -> Path:
    shim_dir = state_dir / SHIM_DIR
    shim_dir.mkdir(parents=True, exist_ok=True)
    curl = shim_dir / "curl"
    curl.write_text(f'#!/bin/sh\nexec {sys.executable} -m devfleet.agnhost_player "$@"\n')
    curl.chmod(0o755)
    return shim_dir.resolve()


class CurlFailure(Exception):
    """curl's exit code and message for a request the pod would not answer."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def answer(url: str, pod: dict[str, Any] | None) -> tuple[str, int | None]:
    """What netexec would answer to `url` (pure): the body, and the exit code it was told
    to exit with (None: it keeps running). CurlFailure when nothing would answer."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if pod is None:
        raise CurlFailure(7, f"Failed to connect to {host} port {parts.port}: no pod has this IP")
    args = (pod.get("spec", {}).get("containers") or [{}])[0].get("args") or []
    if not args or args[0] != "netexec" or (parts.port or 80) != NETEXEC_PORT:
        raise CurlFailure(7, f"Failed to connect to {host} port {parts.port}: Connection refused")
    if parts.path in ("/readyz", "/healthz"):
        return "ok", None
    if parts.path == "/hostname":
        return str(pod.get("metadata", {}).get("name", "")), None
    if parts.path == "/exit":
        raw = parse_qs(parts.query).get("code", ["0"])[0]
        try:
            code = int(raw)
        except ValueError:
            raise CurlFailure(22, f"The requested URL returned error: 400 (code={raw!r})") from None
        if not 0 <= code <= 255:
            raise CurlFailure(22, f"The requested URL returned error: 400 (code={code})")
        return "", code
    raise CurlFailure(22, f"The requested URL returned error: 404 ({parts.path} is not played)")


def main(argv: list[str]) -> int:
    """`curl [options] URL` inside a pod: answer as its netexec would (see `answer`)."""
    urls = [a for a in argv if a.startswith(("http://", "https://"))]
    if not urls:
        print("curl (fleetq kwok agnhost player): no URL given", file=sys.stderr)
        return 2
    url = urls[-1]
    from kubernetes import client, config

    config.load_kube_config(os.environ["KUBECONFIG"])
    core = client.CoreV1Api()
    host = urlsplit(url).hostname or ""
    pods = core.list_pod_for_all_namespaces(field_selector=f"status.podIP={host}").items
    running = [p for p in pods if p.status.phase == "Running" and not p.metadata.deletion_timestamp]
    pod = client.ApiClient().sanitize_for_serialization(running[0]) if running else None
    try:
        body, exit_code = answer(url, pod)
    except CurlFailure as failure:
        print(f"curl: ({failure.code}) {failure}", file=sys.stderr)
        return failure.code
    if exit_code is not None and pod is not None:
        core.patch_namespaced_pod(
            pod["metadata"]["name"],
            pod["metadata"]["namespace"],
            {"metadata": {"annotations": {EXIT_CODE_ANNOTATION: str(exit_code)}}},
        )
    print(body)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

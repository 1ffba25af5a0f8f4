"""A stand-in for the Ray dashboard of every RayCluster in a local fleet.

KubeRay learns how a RayJob's Ray job is doing by asking the Ray dashboard on the cluster's
head pod (`GET http://<head service>:8265/api/jobs/<id>`). On kwok nodes nothing runs, so
there is no dashboard and a RayJob would never end. The fleet runs KubeRay with
`HTTP_PROXY` pointing here (Go's HTTP client sends every plain-HTTP request through it;
the apiserver, on loopback and over HTTPS, is never proxied), and this server answers as
a dashboard whose jobs have all succeeded. KubeRay still decides everything else: in
K8sJobMode (its default) a RayJob completes only once its submitter Job has finished, so
the submitter pod's kwok run time (`pod-complete.stage.kwok.x-k8s.io/delay` on
`submitterPodTemplate`) is how long the RayJob "runs". Nothing of Kueue or fleetq is faked:
this plays the Ray process, as kwok plays the kubelet.

Run: `python -m devfleet.ray_dashboard_stand_in --port N -- <operator argv>`: serves on
127.0.0.1:N and runs the operator as its child with `HTTP_PROXY=http://127.0.0.1:N`,
exiting with the operator's exit code (both are in the launcher's process group, so a stop
signals both).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

JOBS_PATH = "/api/jobs/"
MESSAGE = "Ray stand-in (devfleet): kwok nodes run no Ray; every job reports success"


def job_info(job_id: str) -> dict[str, Any]:
    """A finished, successful Ray job as the dashboard describes it."""
    now = int(time.time() * 1000)
    return {
        "job_id": job_id,
        "submission_id": job_id,
        "type": "SUBMISSION",
        "status": "SUCCEEDED",
        "entrypoint": "",
        "message": MESSAGE,
        "start_time": now,
        "end_time": now,
    }


def answer(method: str, url: str, body: bytes) -> tuple[int, Any]:
    """(status code, JSON body) for one dashboard request (pure, for tests)."""
    path = urlsplit(url).path
    if not path.startswith(JOBS_PATH.rstrip("/")):
        return 404, {"error": f"the stand-in serves {JOBS_PATH} only, not {path}"}
    rest = path[len(JOBS_PATH) :].strip("/") if path.startswith(JOBS_PATH) else ""
    if method == "GET" and not rest:
        return 200, []
    if method == "GET":
        return 200, job_info(rest)
    if method == "POST" and not rest:
        request = json.loads(body or b"{}")
        job_id = str(request.get("submission_id") or request.get("job_id") or "raysubmit")
        return 200, {"job_id": job_id, "submission_id": job_id}
    if method == "POST" and rest.endswith("/stop"):
        return 200, {"stopped": True}
    if method == "DELETE":
        return 200, {"deleted": True}
    return 404, {"error": f"{method} {path} is not served by the stand-in"}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        status, payload = answer(self.command, self.path, body)
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_DELETE = _serve

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        if str(code) != "200":  # KubeRay polls every few seconds: only oddities are news
            print(f"ray dashboard stand-in: {self.command} {self.path} -> {code}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("operator", nargs=argparse.REMAINDER, help="-- argv of the operator")
    args = parser.parse_args(argv)
    operator = args.operator[1:] if args.operator[:1] == ["--"] else args.operator
    server = ThreadingHTTPServer(("127.0.0.1", args.port), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"ray dashboard stand-in on 127.0.0.1:{args.port}", flush=True)
    if not operator:
        threading.Event().wait()
        return 0
    env = dict(os.environ, HTTP_PROXY=f"http://127.0.0.1:{args.port}")
    env.pop("http_proxy", None)
    return subprocess.call(operator, env=env)


if __name__ == "__main__":
    raise SystemExit(main())

"""The Ray dashboard stand-in KubeRay asks about Ray jobs, and the kwok pod logs config."""

from __future__ import annotations

import json
from pathlib import Path

from devfleet.kwok_pod_logs import LOG_TEXT, cri_log, pod_log_documents
from devfleet.ray_dashboard_stand_in import answer

WRITTEN = "2026-01-01T00:00:00.000000000Z"


def test_every_ray_job_reports_success_as_kuberay_reads_it() -> None:
    status, info = answer("GET", "http://train-head-svc.ns.svc.cluster.local:8265/api/jobs/j1", b"")
    assert status == 200
    assert (info["job_id"], info["submission_id"], info["status"]) == ("j1", "j1", "SUCCEEDED")


def test_http_mode_submissions_and_stops_are_accepted_and_other_paths_are_not() -> None:
    body = json.dumps({"submission_id": "s1", "entrypoint": "python x.py"}).encode()
    assert answer("POST", "http://h:8265/api/jobs/", body) == (
        200,
        {"job_id": "s1", "submission_id": "s1"},
    )
    assert answer("POST", "http://h:8265/api/jobs/s1/stop", b"")[0] == 200
    assert answer("GET", "http://h:8265/api/jobs/", b"") == (200, [])
    assert answer("GET", "http://h:8265/api/serve/applications/", b"")[0] == 404


def test_kwok_serves_one_log_file_for_every_pod_and_container(tmp_path: Path) -> None:
    [document] = pod_log_documents(tmp_path / "state")
    cluster_logs = json.loads(document)
    assert cluster_logs["kind"] == "ClusterLogs"
    assert "selector" not in cluster_logs["spec"]
    [log] = cluster_logs["spec"]["logs"]
    assert "containers" not in log
    written = Path(log["logsFile"]).read_text().splitlines()
    assert written == [f"{WRITTEN} stdout F {line}" for line in LOG_TEXT.splitlines()]
    assert cri_log("a\nb", "T") == "T stdout F a\nT stdout F b\n"

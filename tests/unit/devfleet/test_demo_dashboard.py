"""The demo's dashboard viewer may see every view (and do nothing else), and the demo says
where the dashboard is and how to get a token for it."""

from __future__ import annotations

from pathlib import Path

from devfleet.demo_dashboard import VIEWER, dashboard_lines, viewer_manifests
from hub.dashboard.access import view_attributes
from hub.dashboard.views import VIEWS


def _granted() -> set[tuple[str, str, str]]:
    [role] = [m for m in viewer_manifests() if m["kind"] == "ClusterRole"]
    return {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_the_viewer_role_grants_what_every_view_needs_and_only_reads() -> None:
    granted = _granted()
    for view in VIEWS:
        needs = view_attributes(view, "team-a", "some-workload")
        assert (needs.group, needs.resource, needs.verb) in granted, view
    assert {verb for _, _, verb in granted} == {"get", "list"}


def test_the_binding_gives_the_role_to_the_viewer_service_account() -> None:
    by_kind = {m["kind"]: m for m in viewer_manifests()}
    binding = by_kind["ClusterRoleBinding"]
    assert binding["roleRef"]["name"] == by_kind["ClusterRole"]["metadata"]["name"]
    [subject] = binding["subjects"]
    account = by_kind["ServiceAccount"]["metadata"]
    assert (subject["name"], subject["namespace"]) == (account["name"], account["namespace"])


def test_the_instructions_name_the_url_and_mint_the_viewers_token() -> None:
    lines = dashboard_lines("http://127.0.0.1:4242/", Path("/k/kubectl"), Path("/f/manager.yaml"))
    text = "\n".join(lines)
    assert "http://127.0.0.1:4242/" in lines[0]
    assert f"/k/kubectl --kubeconfig /f/manager.yaml create token {VIEWER}" in text
    assert "fleetq dashboard --url http://127.0.0.1:4242/ --token-file" in text

"""The hub chart's user-facing ClusterRoles match upstream Kueue's, name for name.

Users' RoleBindings (and upstream's e2e suites) name `kueue-batch-user-role`,
`kueue-batch-admin-role` and the per-object roles; each generated role must carry the
rules and the batch-admin aggregation label of upstream's role of the same name (read from
the v0.19.2 module), and every registered job kind outside Kubernetes' own groups gets
its editor and viewer."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from core.manager.chartgen.user_roles import ADMIN, USER, user_roles
from devfleet.toolchain import binary_path
from integrations.registry import REGISTRY

REPO = Path(__file__).resolve().parents[3]


def _upstream_rbac_dir() -> Path:
    if shutil.which("go") is None:
        pytest.skip("needs the go command to locate upstream's module")
    done = subprocess.run(
        ["go", "mod", "download", "-json", "sigs.k8s.io/kueue@v0.19.2"],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO / "tools" / "go" / "conformance",
    )
    if done.returncode != 0:
        pytest.skip(f"upstream module not available: {done.stderr[-300:]}")
    return Path(json.loads(done.stdout)["Dir"]) / "config" / "components" / "rbac"


def _rules(role: dict[str, Any]) -> list[tuple[str, str, frozenset[str]]]:
    return sorted(
        (group, resource, frozenset(rule["verbs"]))
        for rule in role.get("rules") or ()
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    )


def _rendered_roles() -> dict[str, dict[str, Any]]:
    helm = binary_path("helm")
    if not helm.exists():
        pytest.skip("helm not built (fleetq dev tools helm)")
    out = subprocess.run(
        [str(helm), "template", "t", str(REPO / "charts/fleetq-hub")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {
        doc["metadata"]["name"]: doc
        for doc in yaml.safe_load_all(out)
        if doc and doc.get("kind") == "ClusterRole" and doc["metadata"]["name"].startswith("kueue-")
    }


def test_each_role_has_the_rules_and_admin_label_of_upstreams_role_of_that_name() -> None:
    rbac = _upstream_rbac_dir()
    rendered = _rendered_roles()
    upstream = {}
    for path in rbac.glob("*_role.yaml"):
        doc = yaml.safe_load(path.read_text())
        if doc.get("kind") == "ClusterRole":
            upstream[f"kueue-{doc['metadata']['name']}"] = doc
    compared = 0
    for name, ours in rendered.items():
        theirs = upstream.get(name)
        assert theirs is not None, f"{name}: upstream has no role of that name"
        if "aggregationRule" in theirs:
            assert ours["aggregationRule"] == theirs["aggregationRule"], name
            continue
        compared += 1
        assert _rules(ours) == _rules(theirs), name
        for label in (ADMIN, "rbac.kueue.x-k8s.io/role"):
            assert ours["metadata"]["labels"].get(label) == theirs["metadata"]["labels"].get(
                label
            ), (name, label)
    assert compared >= 14
    assert {"kueue-batch-admin-role", "kueue-batch-user-role"} <= set(rendered)


def test_users_see_their_queues_and_run_jobs_but_admins_alone_manage_quota() -> None:
    roles = {role.name: role for role in user_roles(REGISTRY)}
    assert roles["localqueue-viewer-role"].batch_user
    assert roles["pending-workloads-lq-viewer-role"].batch_user
    assert not roles["pending-workloads-cq-viewer-role"].batch_user
    assert not roles["clusterqueue-editor-role"].batch_user
    assert not roles["workload-editor-role"].batch_user
    for kind in REGISTRY:
        if kind.resource.group in ("", "apps"):
            assert f"{kind.resource.kind.lower()}-editor-role" not in roles
            continue
        editor = roles[f"{kind.resource.kind.lower()}-editor-role"]
        assert editor.batch_user and "create" in editor.verbs, kind.framework
        assert f"{kind.resource.kind.lower()}-viewer-role" in roles


def test_the_roles_can_be_left_out() -> None:
    helm = binary_path("helm")
    if not helm.exists():
        pytest.skip("helm not built (fleetq dev tools helm)")
    out = subprocess.run(
        [
            str(helm),
            "template",
            "t",
            str(REPO / "charts/fleetq-hub"),
            "--set",
            "userRoles.enabled=false",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "kueue-batch-user-role" not in out
    assert USER not in out

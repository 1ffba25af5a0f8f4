"""The layer contracts of pyproject.toml hold on the real tree and break on a forbidden import.

Each case builds a small tree shaped like fleetq's (the allowed imports of every layer, two
kinds and a top-level helper), checks it with the real `[tool.importlinter]` configuration
and the kind contract of tools/kind_contract.py, adds one forbidden import, and expects
`lint-imports` to fail naming the contract that forbids it — and only that one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CONTRACT_NAMES = {
    contract["id"]: contract["name"]
    for contract in tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"][
        "contracts"
    ]
}

# The allowed shape: every import here is one the design permits.
TREE = {
    "core/api/objects.py": "",
    "core/engine/cycle.py": "from core.api import objects\n",
    "core/kube/client.py": "import asyncio\nimport kubernetes_asyncio\n",
    "core/manager/registry.py": (
        "from core.engine import cycle\n"
        "from core.kube import client\n"
        "from integrations.framework import kind\n"
        "from integrations.batch_job import kind as batch_job_kind\n"
        "from integrations.jobset import kind as jobset_kind\n"
    ),
    "hub/app.py": "from core.manager import registry\n",
    "worker_agent/agent.py": "from core.manager import registry\n",
    "integrations/labels.py": "from core.api import objects\n",
    "integrations/framework/kind.py": "from core.api import objects\n",
    "integrations/batch_job/status.py": "",
    "integrations/batch_job/kind.py": (
        "import json\n"
        "from core.api import objects\n"
        "from core.engine import cycle\n"
        "from integrations import labels\n"
        "from integrations.framework import kind\n"
        "from integrations.batch_job import status\n"
    ),
    "integrations/jobset/kind.py": "from integrations.framework import kind\n",
    "cli/main.py": "import importlib.metadata\nfrom core.manager import registry\n",
    "devfleet/dev_commands.py": "from cli import main\n",
    "bench/run.py": "from core.engine import cycle\n",
}

FORBIDDEN = [
    pytest.param("core/engine/cycle.py", "import asyncio", "engine-is-pure", id="engine-asyncio"),
    pytest.param(
        "core/engine/cycle.py", "from core.kube import client", "engine-is-pure", id="engine-kube"
    ),
    pytest.param(
        "core/api/objects.py", "import aiohttp", "engine-is-pure", id="engine-aiohttp-via-api"
    ),
    pytest.param(
        "core/engine/cycle.py",
        "from integrations.batch_job import status",
        "engine-is-pure",
        id="engine-kind",
    ),
    pytest.param(
        "core/manager/registry.py", "from hub import app", "core-is-shared", id="core-hub"
    ),
    pytest.param("core/kube/client.py", "import cli.main", "core-is-shared", id="core-cli"),
    pytest.param(
        "integrations/batch_job/kind.py",
        "from core.manager import registry",
        "kinds-import-framework-and-core",
        id="kind-manager",
    ),
    pytest.param(
        "integrations/batch_job/status.py",
        "from core.kube import client",
        "kinds-import-framework-and-core",
        id="kind-kube",
    ),
    pytest.param(
        "integrations/jobset/kind.py",
        "from integrations.batch_job import status",
        "kinds-import-framework-and-core",
        id="kind-another-kind",
    ),
    pytest.param(
        "integrations/ray/__init__.py",
        "import worker_agent.agent",
        "kinds-import-framework-and-core",
        id="new-kind-not-named-in-config",
    ),
    pytest.param(
        "cli/main.py",
        "from devfleet import dev_commands",
        "product-without-dev-code",
        id="cli-devfleet",
    ),
    pytest.param(
        "hub/app.py", "from tests import builders", "product-without-dev-code", id="hub-tests"
    ),
    pytest.param(
        "integrations/framework/kind.py", "import bench.run", "product-without-dev-code", id="bench"
    ),
]


def lint_imports(root: Path) -> tuple[int, str]:
    """Run `lint-imports` on the tree at `root`; its exit code and its output, one line."""
    script = Path(sys.executable).with_name("lint-imports")
    env = {**os.environ, "COLUMNS": "500", "NO_COLOR": "1"}
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [str(script), "--no-cache", "--no-logo"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.returncode, " ".join((done.stdout + done.stderr).split())


def outcome(output: str, contract_id: str) -> str:
    name = " ".join(CONTRACT_NAMES[contract_id].split())
    if f"{name} KEPT" in output:
        return "KEPT"
    if f"{name} BROKEN" in output:
        return "BROKEN"
    raise AssertionError(f"contract {contract_id!r} not reported:\n{output}")


def write_tree(root: Path, files: dict[str, str]) -> None:
    """Write `files` under `root`, with an `__init__.py` in every folder on the way."""
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        for package in Path(relative).parents[:-1]:
            (root / package / "__init__.py").touch()
        path.write_text(text)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "tools").mkdir()
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copy(REPO / "tools" / "kind_contract.py", tmp_path / "tools" / "kind_contract.py")
    write_tree(tmp_path, TREE)
    return tmp_path


def test_the_real_tree_keeps_every_contract() -> None:
    code, output = lint_imports(REPO)
    assert code == 0, output
    assert [outcome(output, id_) for id_ in CONTRACT_NAMES] == ["KEPT"] * len(CONTRACT_NAMES)


def test_the_allowed_shape_keeps_every_contract(tree: Path) -> None:
    code, output = lint_imports(tree)
    assert code == 0, output
    assert [outcome(output, id_) for id_ in CONTRACT_NAMES] == ["KEPT"] * len(CONTRACT_NAMES)


@pytest.mark.parametrize(("module", "line", "contract_id"), FORBIDDEN)
def test_a_forbidden_import_breaks_its_contract(
    tree: Path, module: str, line: str, contract_id: str
) -> None:
    path = tree / module
    write_tree(tree, {module: (path.read_text() if path.exists() else "") + line + "\n"})
    code, output = lint_imports(tree)
    assert code != 0, output
    broken = {id_ for id_ in CONTRACT_NAMES if outcome(output, id_) == "BROKEN"}
    assert broken == {contract_id}, output
    importer = module.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    assert importer in output, output

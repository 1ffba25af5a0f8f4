"""The container image recipe, read as text (tests/integration/test_image.py builds and runs
it): multi-stage, every runtime dependency pinned, every package copied in, non-root with
the UID the charts run as, `fleetq` as the entrypoint."""

from __future__ import annotations

import fnmatch
import json
import re
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

REPO = Path(__file__).resolve().parents[3]
DOCKERFILE = (REPO / "Dockerfile").read_text()


def _instructions(name: str) -> list[str]:
    """Each `name` instruction's arguments, continuation lines joined."""
    joined = DOCKERFILE.replace("\\\n", " ")
    return [
        line.split(None, 1)[1].strip()
        for line in joined.splitlines()
        if line.startswith(name + " ")
    ]


def _packages() -> list[str]:
    """Top-level packages pyproject.toml ships (`core*` → `core`)."""
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    includes = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    return [pattern.rstrip("*") for pattern in includes]


def test_the_build_has_a_separate_runtime_stage(image_constraints: ModuleType) -> None:
    stages = _instructions("FROM")
    assert len(stages) == 2
    assert stages[0].endswith("AS build")
    assert "--from=build" in " ".join(_instructions("COPY"))
    arg = next(a for a in _instructions("ARG") if a.startswith("PYTHON_IMAGE="))
    base = arg.split("=", 1)[1]
    # A full patch version, on the Python minor version the constraints were resolved for.
    assert re.fullmatch(r"python:\d+\.\d+\.\d+-slim-\w+", base)
    assert base.split(":")[1].startswith(image_constraints.IMAGE_ENVIRONMENT["python_version"])


def test_the_image_runs_fleetq_as_the_non_root_user_the_charts_expect(render_hub: Any) -> None:
    (user,) = _instructions("USER")
    uid, gid = (int(part) for part in user.split(":"))
    assert uid != 0 and gid != 0
    pod = render_hub().one("Deployment")["spec"]["template"]["spec"]["securityContext"]
    assert (pod["runAsUser"], pod["runAsGroup"]) == (uid, gid)
    # The account is written into /etc/passwd and /etc/group (the Debian base has no useradd).
    assert f"fleetq:x:{uid}:{gid}:" in DOCKERFILE and f"fleetq:x:{gid}:" in DOCKERFILE
    assert json.loads(_instructions("ENTRYPOINT")[0]) == ["fleetq"]


def test_every_package_is_copied_into_the_build_and_not_ignored() -> None:
    copied = {args.split()[0] for args in _instructions("COPY") if "--from" not in args}
    ignore = [
        line.strip()
        for line in (REPO / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]

    def sent(path: str) -> bool:
        """Docker's rule: the last matching pattern wins; `!` re-includes."""
        included = True
        for pattern in ignore:
            negated = pattern.startswith("!")
            body = pattern.lstrip("!").rstrip("/")
            if fnmatch.fnmatch(path, body) or path.startswith(body + "/"):
                included = negated
        return included

    for package in _packages():
        assert package in copied, f"Dockerfile does not COPY {package}"
        assert (REPO / package).is_dir()
        assert sent(f"{package}/__init__.py"), f".dockerignore drops {package}"
    for needed in ("pyproject.toml", "README.md", "constraints.txt", "image/wheels/a.whl"):
        assert sent(needed), needed
    for dropped in (".git/HEAD", "tests/conftest.py", ".venv/bin/python", "hub/__pycache__/a.pyc"):
        assert not sent(dropped), dropped


def test_dependencies_install_from_the_pinned_constraints_only() -> None:
    runs = " ".join(_instructions("RUN"))
    assert "--requirement constraints.txt" in runs
    assert "--only-binary=:all:" in runs
    assert "--no-deps" in runs and "pip check" in runs


def test_every_runtime_dependency_is_pinned_within_what_pyproject_allows(
    image_constraints: ModuleType,
) -> None:
    pins = image_constraints.read_pins()
    needed = image_constraints.closure(image_constraints.runtime_requirements())
    missing = sorted(set(needed) - set(pins))
    regenerate = "python tests/unit/charts/image_constraints.py --write"
    assert not missing, f"constraints.txt lacks {missing}; run {regenerate}"
    for requirement in image_constraints.runtime_requirements():
        pinned = Version(pins[image_constraints.canonical(requirement.name)])
        assert pinned in SpecifierSet(str(requirement.specifier)), (requirement, pinned)


def test_the_constraints_file_is_what_the_generator_writes(image_constraints: ModuleType) -> None:
    text = (REPO / "constraints.txt").read_text()
    pins = image_constraints.read_pins()
    assert text == image_constraints.render(pins)
    assert list(pins) == sorted(pins)


def test_the_container_tests_skip_without_podman_only_outside_ci(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.integration import chart_container

    monkeypatch.setattr(chart_container.shutil, "which", lambda tool: None)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="apt-get install -y podman"):
        chart_container.require_podman()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="podman, mmdebstrap, runc not installed"):
        chart_container.require_podman()


def test_the_local_build_feeds_the_same_dockerfile_its_base_and_wheels() -> None:
    script = (REPO / "image" / "build.sh").read_text()
    assert '"PYTHON_IMAGE=$BASE"' in script and "PIP_INSTALL_FLAGS=--no-index" in script
    assert "--file Dockerfile" in script
    assert "PIP_INSTALL_FLAGS" in " ".join(_instructions("ARG"))
    assert "COPY image/wheels/ /wheels/" in DOCKERFILE

"""Rendering the charts with the real helm binary, for tests that read what helm would apply.

`render_hub(values)` / `render_worker(values)` run `helm template` with the values given (on
top of the chart's own) and return the objects, parsed, as a `Rendered` list with lookups
by kind; a failed render raises `RenderError` with helm's message, so tests can assert on
a chart's `fail` messages too. Renders are cached per values set: the same values are
rendered once per session.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from devfleet.toolchain import binary_path

REPO = Path(__file__).resolve().parents[3]
HUB_CHART = REPO / "charts" / "fleetq-hub"
WORKER_CHART = REPO / "charts" / "fleetq-worker"
RELEASE = "fq"
NAMESPACE = "fleetq-system"

Manifest = dict[str, Any]


class Rendered(list[Manifest]):
    """The objects of one render, with lookups by kind (and name)."""

    def of_kind(self, kind: str) -> list[Manifest]:
        return [obj for obj in self if obj["kind"] == kind]

    def one(self, kind: str, name: str | None = None) -> Manifest:
        found = [o for o in self.of_kind(kind) if name is None or o["metadata"]["name"] == name]
        assert len(found) == 1, f"expected one {kind} {name or ''}, got {len(found)}"
        return found[0]

    def kinds(self) -> set[str]:
        return {obj["kind"] for obj in self}

    def container(self, kind: str = "Deployment") -> Manifest:
        """The first container of the (one) workload object."""
        containers: list[Manifest] = self.one(kind)["spec"]["template"]["spec"]["containers"]
        return containers[0]


Render = Callable[..., Rendered]


class RenderError(RuntimeError):
    """helm refused to render; the message is helm's."""


class Helm:
    """The helm binary the toolchain built (a missing one fails: `make tools` builds it)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._cache: dict[str, Rendered | RenderError] = {}

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.path), *args], capture_output=True, text=True, timeout=60, check=False
        )

    def template(
        self,
        chart: Path,
        values: dict[str, Any] | None = None,
        *,
        namespace: str = NAMESPACE,
        release: str = RELEASE,
        tmp: Path,
    ) -> Rendered:
        key = json.dumps([str(chart), values or {}, namespace, release], sort_keys=True)
        if key not in self._cache:
            values_file = tmp / f"values-{len(self._cache)}.yaml"
            values_file.write_text(yaml.safe_dump(values or {}))
            result = self.run(
                "template", release, str(chart), "--namespace", namespace, "-f", str(values_file)
            )
            if result.returncode != 0:
                self._cache[key] = RenderError(result.stderr.strip())
            else:
                docs = yaml.safe_load_all(result.stdout)
                self._cache[key] = Rendered(doc for doc in docs if doc)
        cached = self._cache[key]
        if isinstance(cached, RenderError):
            raise cached
        return cached


@pytest.fixture(scope="session")
def helm() -> Helm:
    path = binary_path("helm")
    if not path.exists():
        pytest.fail(f"helm is not built ({path}); run `make tools` (or `fleetq dev tools helm`)")
    return Helm(path)


@pytest.fixture(scope="session")
def render_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("chart-values")


@pytest.fixture(scope="session")
def render_hub(helm: Helm, render_tmp: Path) -> Render:
    def render(values: dict[str, Any] | None = None, **kwargs: Any) -> Rendered:
        return helm.template(HUB_CHART, values, tmp=render_tmp, **kwargs)

    return render


@pytest.fixture(scope="session")
def render_worker(helm: Helm, render_tmp: Path) -> Render:
    def render(values: dict[str, Any] | None = None, **kwargs: Any) -> Rendered:
        return helm.template(WORKER_CHART, values, tmp=render_tmp, **kwargs)

    return render


@pytest.fixture(scope="session")
def render_error() -> type[RenderError]:
    """The error class, for `pytest.raises` (test modules cannot import conftest)."""
    return RenderError


@pytest.fixture(scope="session")
def image_constraints() -> Iterator[ModuleType]:
    """The constraints generator beside this file (a script, not an importable package)."""
    path = Path(__file__).with_name("image_constraints.py")
    spec = importlib.util.spec_from_file_location("fleetq_image_constraints", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module

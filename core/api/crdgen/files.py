"""Rendering the CRDs to YAML files in the charts, and checking they are current."""

from __future__ import annotations

from pathlib import Path

import yaml

import core
from core.api.crdgen.crd import crd_document
from core.api.registry import KINDS, KindInfo

HEADER = "# Generated from core/api by `python -m core.api.crdgen`; do not edit.\n"
CHART_CRD_DIRS = ("charts/fleetq-hub/crds", "charts/fleetq-worker/crds")


def repository_root() -> Path:
    return Path(core.__file__).resolve().parent.parent


def file_name(info: KindInfo) -> str:
    return f"{info.group}_{info.plural}.yaml"


def render(info: KindInfo) -> str:
    """The YAML text of one CRD, stable across runs (sorted keys)."""
    body = yaml.safe_dump(crd_document(info), sort_keys=True, default_flow_style=False, width=100)
    return HEADER + body


def expected_files(root: Path | None = None) -> dict[Path, str]:
    base = root or repository_root()
    rendered = {file_name(info): render(info) for info in KINDS}
    return {
        base / directory / name: text
        for directory in CHART_CRD_DIRS
        for name, text in rendered.items()
    }


def write(root: Path | None = None) -> list[Path]:
    """Write every CRD file and remove stale generated ones; return what was written."""
    expected = expected_files(root)
    written = []
    for path, text in expected.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            written.append(path)
    for path in _stale(expected, root):
        path.unlink()
    return written


def check(root: Path | None = None) -> list[str]:
    """Differences between the files on disk and what would be generated."""
    expected = expected_files(root)
    problems = []
    for path, text in expected.items():
        if not path.exists():
            problems.append(f"missing: {path}")
        elif path.read_text() != text:
            problems.append(f"out of date: {path}")
    problems.extend(f"stale (no longer generated): {path}" for path in _stale(expected, root))
    return problems


def _stale(expected: dict[Path, str], root: Path | None) -> list[Path]:
    base = root or repository_root()
    stale = []
    for directory in CHART_CRD_DIRS:
        folder = base / directory
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.yaml")):
            if path not in expected and path.read_text().startswith(HEADER):
                stale.append(path)
    return stale

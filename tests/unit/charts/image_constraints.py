"""The image's pinned dependencies: fleetq's runtime requirements and everything they pull in.

The Dockerfile installs fleetq with `--constraint constraints.txt`, so an image built next
month gets the versions tested here today. This module computes that closure from
pyproject.toml and the packages installed in the current environment (extras followed,
markers evaluated for CPython 3.11 on Linux, the image's platform), and writes or checks
the file. Regenerate after changing dependencies:

    python tests/unit/charts/image_constraints.py --write
"""

from __future__ import annotations

import argparse
import importlib.metadata
import re
import sys
import tomllib
from collections.abc import Iterable
from pathlib import Path

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[3]
CONSTRAINTS = REPO / "constraints.txt"
IMAGE_ENVIRONMENT = {
    "python_version": "3.11",
    "python_full_version": "3.11.7",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "os_name": "posix",
    "platform_machine": "x86_64",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
}
HEADER = (
    "# Pinned runtime dependencies of the fleetq image (Dockerfile: pip --constraint).\n"
    "# Generated from the tested environment by\n"
    "#   python tests/unit/charts/image_constraints.py --write\n"
    "# do not edit by hand.\n"
)


def canonical(name: str) -> str:
    """PEP 503 normalised name: `PyYAML` and `pyyaml`, `typing_extensions` and `-` agree."""
    return re.sub(r"[-_.]+", "-", name).lower()


def runtime_requirements(pyproject: Path = REPO / "pyproject.toml") -> list[Requirement]:
    """The `[project] dependencies` of pyproject.toml (not the dev extra)."""
    project = tomllib.loads(pyproject.read_text())["project"]
    return [Requirement(text) for text in project["dependencies"]]


def _applies(requirement: Requirement, extras: Iterable[str]) -> bool:
    if requirement.marker is None:
        return True
    return any(
        requirement.marker.evaluate({**IMAGE_ENVIRONMENT, "extra": extra})
        for extra in ("", *extras)
    )


def closure(requirements: Iterable[Requirement]) -> dict[str, str]:
    """Installed version of every package the requirements need, transitively, by name."""
    pinned: dict[str, str] = {}
    visited: set[tuple[str, frozenset[str]]] = set()
    pending = [(req.name, frozenset(req.extras)) for req in requirements if _applies(req, ())]
    while pending:
        name, extras = pending.pop()
        if (canonical(name), extras) in visited:
            continue
        visited.add((canonical(name), extras))
        distribution = importlib.metadata.distribution(name)
        pinned[canonical(name)] = distribution.version
        for text in distribution.requires or ():
            requirement = Requirement(text)
            if _applies(requirement, extras):
                pending.append((requirement.name, frozenset(requirement.extras)))
    return dict(sorted(pinned.items()))


def render(pins: dict[str, str]) -> str:
    return HEADER + "".join(f"{name}=={version}\n" for name, version in pins.items())


def read_pins(path: Path = CONSTRAINTS) -> dict[str, str]:
    """`name==version` lines of a constraints file, by canonical name."""
    pins: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        if not sep:
            raise ValueError(f"{path}: {line!r} is not pinned with ==")
        pins[canonical(name.strip())] = version.strip()
    return pins


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite constraints.txt")
    args = parser.parse_args(argv)
    text = render(closure(runtime_requirements()))
    if args.write:
        CONSTRAINTS.write_text(text)
        print(f"wrote {CONSTRAINTS}")
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

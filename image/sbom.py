"""The fleetq image's software bill of materials, read from inside the image.

image/build.sh runs this file with the image's own Python (`python - < image/sbom.py`),
so the list is what the image holds, not what the build meant to put there: every Debian
package dpkg records as installed and every Python distribution of the fleetq venv. Run
on the host with `--summary FILE` it prints such a file for people.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import sys
from pathlib import Path

DPKG_STATUS = Path("/var/lib/dpkg/status")


def debian_packages(status: Path = DPKG_STATUS) -> list[dict[str, str]]:
    """Installed packages of a dpkg status file (its stanzas are blank-line separated)."""
    packages = []
    for stanza in status.read_text().split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in stanza.splitlines() if ": " in line and line[0] != " "
        )
        if fields.get("Status", "").endswith(" installed") and "Package" in fields:
            packages.append(
                {
                    "name": fields["Package"],
                    "version": fields.get("Version", ""),
                    "architecture": fields.get("Architecture", ""),
                }
            )
    return sorted(packages, key=lambda p: p["name"])


def python_packages() -> list[dict[str, str]]:
    """Distributions importable by the running interpreter (the image's venv)."""
    found = {(dist.metadata["Name"], dist.version) for dist in importlib.metadata.distributions()}
    return [{"name": name, "version": version} for name, version in sorted(found)]


def collect() -> dict[str, object]:
    return {
        "python": {"version": sys.version.split()[0], "packages": python_packages()},
        "debian": debian_packages(),
    }


def summary(path: Path) -> str:
    bom = json.loads(path.read_text())
    python = bom["python"]
    lines = [f"Python {python['version']}, {len(python['packages'])} packages:"]
    lines += [f"  {p['name']}=={p['version']}" for p in python["packages"]]
    lines.append(f"Debian, {len(bom['debian'])} packages:")
    lines += [f"  {p['name']} {p['version']}" for p in bom["debian"]]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--summary", type=Path, help="print this JSON bill of materials")
    args = parser.parse_args(argv)
    if args.summary:
        print(summary(args.summary))
    else:
        json.dump(collect(), sys.stdout, indent=1)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

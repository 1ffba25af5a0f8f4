"""Write (or check) the charts' job-kind templates from the job-framework registry.

python -m core.manager.chartgen           # regenerate charts/*/templates/_job-kinds.tpl
python -m core.manager.chartgen --check   # exit 1 if the files on disk are stale
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from core.manager.chartgen.job_kinds import generated_files
from integrations.registry import REGISTRY

REPO_ROOT = Path(__file__).resolve().parents[3]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core.manager.chartgen", description=__doc__)
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    parser.add_argument("--root", type=Path, default=REPO_ROOT, help="repository root")
    args = parser.parse_args(argv)
    files = generated_files(args.root, REGISTRY)
    if args.check:
        stale = [
            path for path, text in files.items() if not path.exists() or path.read_text() != text
        ]
        for path in stale:
            print(f"{path} is stale", file=sys.stderr)
        if stale:
            print(
                "chart job-kind templates are stale: run `python -m core.manager.chartgen`",
                file=sys.stderr,
            )
            return 1
        print("chart job-kind templates up to date")
        return 0
    for path, text in files.items():
        path.write_text(text)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

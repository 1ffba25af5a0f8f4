"""Write (or check) the CRD manifests of both charts from the typed API.

python -m core.api.crdgen           # regenerate charts/*/crds/
python -m core.api.crdgen --check   # exit 1 if the files on disk are stale
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from core.api.crdgen.files import CHART_CRD_DIRS, check, write


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core.api.crdgen", description=__doc__)
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    parser.add_argument(
        "--root", type=Path, default=None, help="repository root (default: this checkout)"
    )
    args = parser.parse_args(argv)
    if args.check:
        problems = check(args.root)
        for problem in problems:
            print(problem, file=sys.stderr)
        if problems:
            print("CRDs are stale: run `python -m core.api.crdgen`", file=sys.stderr)
            return 1
        print(f"CRDs up to date in {', '.join(CHART_CRD_DIRS)}")
        return 0
    for path in write(args.root):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

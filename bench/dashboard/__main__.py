"""`python -m bench.dashboard`: the dashboard's cost on the hub (bench/README.md)."""

from bench.dashboard.run import main

raise SystemExit(main())

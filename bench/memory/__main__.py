"""`python -m bench.memory`: the hub's memory with many pending workloads (bench/README.md)."""

from bench.memory.run import main

raise SystemExit(main())

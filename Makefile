# fleetq: the two commands a newcomer needs are `make demo` and `make test`.
# Everything else here is a step those two run, exposed for developers.

SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: help install tools fleet-tools crds lint typecheck test test-unit test-integration test-e2e \
        demo fleet-up fleet-down fleet-status bench bench-dashboard clean conformance-tools \
        conformance image real-node-tools real-node real-node-test

help:
	@echo "make demo   - build tools, start a local fleet, install fleetq, spread GPU/CPU jobs, tear down (KEEP=1 keeps it)"
	@echo "make test   - lint, type-check and run unit, integration and e2e tests"
	@echo "make tools  - build kube-apiserver, etcd, kwok, helm, kueue... from Go modules (cached)"
	@echo "make fleet-up / fleet-status / fleet-down - a local dev fleet (1 manager + 2 workers)"
	@echo "make image  - build the fleetq image with podman, no registry: dist/fleetq-<version>.oci.tar + SBOM"
	@echo "make real-node / real-node-test - the hub chart's pods on a real kubelet + containerd (after make image)"

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

tools: install
	$(BIN)/fleetq dev tools

# The tools the fleet, the tests and the demo need: upstream Kueue at both tested versions
# (kueue = v0.19.2, kueue-v0.17 = v0.17.0) for the interop tests and benchmarks.
FLEET_TOOLS ?= kubernetes etcd kwok helm kueue kueue-v0.17 jobset conformance ginkgo kuberay trainer training-operator mpi-operator lws
fleet-tools: install
	$(BIN)/fleetq dev tools $(FLEET_TOOLS)

crds: install
	$(BIN)/python -m core.api.crdgen
	$(BIN)/python -m core.manager.chartgen

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m core.api.crdgen --check
	$(BIN)/python -m core.manager.chartgen --check
	$(BIN)/lint-imports --no-cache

typecheck: install
	$(BIN)/mypy

test-unit: install
	$(BIN)/pytest tests/unit -q $(PYTEST_ARGS)

test-integration: install fleet-tools
	$(BIN)/pytest tests/integration -q $(PYTEST_ARGS)

test-e2e: install fleet-tools
	$(BIN)/pytest tests/e2e -q $(PYTEST_ARGS)

# One pytest run for every tier, so the fleet starts once for the whole session.
test: install fleet-tools lint typecheck
	$(BIN)/pytest tests -q -rfEs --durations=30 $(PYTEST_ARGS)

# The image, from the Dockerfile, on a Debian base made by mmdebstrap (no image registry);
# needs podman, buildah, runc and mmdebstrap (.ci/run installs them). docs/install.md §1.
image:
	bash image/build.sh

# The demo builds the tools it needs itself (kubernetes, etcd, kwok, helm), with progress.
demo: install
	$(BIN)/fleetq dev demo $(if $(KEEP),--keep,)

fleet-up: install fleet-tools
	$(BIN)/fleetq dev up --workers 2

fleet-status: install
	$(BIN)/fleetq dev status

fleet-down: install
	$(BIN)/fleetq dev down

# Upstream Kueue's e2e suites and kubectl-kueue (in FLEET_TOOLS too: `make test` runs a
# slice of singlecluster/baseline) and a run of it against fleetq (docs/conformance.md).
conformance-tools: install
	$(BIN)/fleetq dev tools conformance ginkgo

# One run per suite, one after the other (each on a fleet of its own shape); pick suites
# with CONFORMANCE_SUITES="extended", pass flags with CONFORMANCE_ARGS="--focus ...".
CONFORMANCE_SUITES ?= baseline multikueue
conformance: install
	@status=0; for suite in $(CONFORMANCE_SUITES); do \
	  $(BIN)/fleetq dev conformance --suite $$suite $(CONFORMANCE_ARGS) || status=1; \
	done; exit $$status

# A real node (kubelet from the Kubernetes module + Debian's containerd and runc) running
# the hub chart's pods; opt-in: not in FLEET_TOOLS, not in `make test` (docs/install.md §7).
real-node-tools: install fleet-tools
	$(BIN)/fleetq dev tools kubelet

real-node: real-node-tools
	$(BIN)/fleetq dev real-node $(if $(KEEP),--keep,)

real-node-test: real-node-tools
	$(BIN)/pytest tests/e2e/test_real_node.py -m real_node -q -rfEs $(PYTEST_ARGS)

bench: install
	$(BIN)/python bench/engine/run.py

# The dashboard's cost on a real hub and apiservers (bench/README.md); BENCH_ARGS passes
# options, e.g. BENCH_ARGS="--viewers 3".
bench-dashboard: install
	$(BIN)/fleetq dev tools kubernetes etcd kwok
	$(BIN)/python -m bench.dashboard $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

# syntax=docker/dockerfile:1
#
# The fleetq image: `fleetq hub` on a manager cluster, `fleetq agent` on each worker (the
# charts in charts/ run it with those arguments). No image is published and none is built
# by this repository's tests or CI (their machines have no container engine); build it
# yourself, push it, and point the charts' image.repository at it (docs/install.md).
#
#   docker build -t registry.example/fleetq:0.1.0 .
#
# Dependencies are pinned by constraints.txt (generated from the tested environment) and
# installed from wheels only, so the build needs no compiler and yields the tested versions.

ARG PYTHON_IMAGE=python:3.11.7-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ARG SETUPTOOLS_VERSION=84.2.1
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src

# Dependencies first: this layer is reused until constraints.txt changes.
COPY constraints.txt ./
RUN python -m venv /opt/fleetq \
 && /opt/fleetq/bin/pip install --only-binary=:all: --requirement constraints.txt

# Then fleetq itself: a wheel built against a pinned setuptools, installed without
# resolving anything again, and a consistency check of the result.
COPY pyproject.toml README.md ./
COPY core ./core
COPY hub ./hub
COPY worker_agent ./worker_agent
COPY integrations ./integrations
COPY cli ./cli
COPY devfleet ./devfleet
RUN pip install "setuptools==${SETUPTOOLS_VERSION}" \
 && pip wheel --no-deps --no-build-isolation --wheel-dir /wheels . \
 && /opt/fleetq/bin/pip install --no-deps /wheels/fleetq-*.whl \
 && /opt/fleetq/bin/pip check \
 && /opt/fleetq/bin/python -m compileall -q /opt/fleetq/lib \
 && /opt/fleetq/bin/fleetq version

FROM ${PYTHON_IMAGE}
# A fixed non-root UID/GID (the charts' runAsUser/runAsGroup); no home, no login shell.
RUN groupadd --system --gid 65532 fleetq \
 && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /tmp \
      --shell /usr/sbin/nologin fleetq
COPY --from=build /opt/fleetq /opt/fleetq
ENV PATH=/opt/fleetq/bin:${PATH} \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp
USER 65532:65532
WORKDIR /tmp
ENTRYPOINT ["fleetq"]
CMD ["--help"]

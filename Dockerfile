# syntax=docker/dockerfile:1
#
# The fleetq image: `fleetq hub` on a manager cluster, `fleetq agent` on each worker (the
# charts in charts/ run it with those arguments). Two ways to build it (docs/install.md):
#
#   docker build -t registry.example/fleetq:0.1.0 .      # anywhere, from python:*-slim
#   make image                                           # here, with no image registry:
#     buildah builds this same file from a Debian base made by mmdebstrap
#     (--build-arg PYTHON_IMAGE=localhost/fleetq-base:<key>) and wheels downloaded into
#     image/wheels beforehand (--build-arg PIP_INSTALL_FLAGS=--no-index).
#
# Dependencies are pinned by constraints.txt (generated from the tested environment) and
# installed from wheels only, so the build needs no compiler and yields the tested versions.
# The base only has to provide `python3` with its `venv` module and a POSIX shell.

ARG PYTHON_IMAGE=python:3.11.7-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ARG SETUPTOOLS_VERSION=84.2.1
# Extra pip flags; `make image` passes --no-index so only image/wheels is used.
ARG PIP_INSTALL_FLAGS=""
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src

# Wheels supplied beside the sources (empty but for a README when building elsewhere).
COPY image/wheels/ /wheels/

# Dependencies first: this layer is reused until constraints.txt changes.
COPY constraints.txt ./
RUN python3 -m venv /opt/fleetq \
 && /opt/fleetq/bin/pip install ${PIP_INSTALL_FLAGS} --find-links /wheels \
      --only-binary=:all: --requirement constraints.txt

# Then fleetq itself: a wheel built by a pinned setuptools in a throw-away venv, installed
# without resolving anything again, and a consistency check of the result.
COPY pyproject.toml README.md ./
COPY core ./core
COPY hub ./hub
COPY worker_agent ./worker_agent
COPY integrations ./integrations
COPY cli ./cli
COPY devfleet ./devfleet
RUN python3 -m venv /opt/build \
 && /opt/build/bin/pip install ${PIP_INSTALL_FLAGS} --find-links /wheels --only-binary=:all: \
      "setuptools==${SETUPTOOLS_VERSION}" \
 && /opt/build/bin/pip wheel --no-deps --no-build-isolation --wheel-dir /tmp/dist . \
 && /opt/fleetq/bin/pip install --no-index --no-deps /tmp/dist/fleetq-*.whl \
 && /opt/fleetq/bin/pip check \
 && /opt/fleetq/bin/pip uninstall --yes --quiet pip setuptools \
 && rm -f /opt/fleetq/bin/activate* /opt/fleetq/bin/pip* \
 && /opt/fleetq/bin/python -m compileall -q /opt/fleetq/lib \
 && /opt/fleetq/bin/fleetq version

FROM ${PYTHON_IMAGE}
# A fixed non-root UID/GID (the charts' runAsUser/runAsGroup); no home, no login shell.
# Written directly (no useradd): the minimal Debian base has no passwd package.
RUN echo 'fleetq:x:65532:' >> /etc/group \
 && echo 'fleetq:x:65532:65532:fleetq:/tmp:/usr/sbin/nologin' >> /etc/passwd
COPY --from=build /opt/fleetq /opt/fleetq
ENV PATH=/opt/fleetq/bin:${PATH} \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp
USER 65532:65532
WORKDIR /tmp
ENTRYPOINT ["fleetq"]
CMD ["--help"]

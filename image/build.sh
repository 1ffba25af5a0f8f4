#!/usr/bin/env bash
# `make image`: build the fleetq image from the repository's Dockerfile with podman/buildah,
# with no image registry: the base is a Debian root filesystem made by mmdebstrap from the
# machine's Debian mirror, the Python dependencies are wheels of constraints.txt downloaded
# with pip. Writes dist/fleetq-<version>.oci.tar (an OCI archive tagged
# localhost/fleetq:<version>) and dist/fleetq-<version>.sbom.json, and prints the size and
# the bill of materials.
#
# Cached under ~/.cache/fleetq/image (FLEETQ_IMAGE_CACHE): the base tarball, keyed by its
# package list and options, and the wheels, keyed by constraints.txt. A warm run rebuilds
# only the image layers whose inputs changed.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD

export CONTAINERS_CONF="$REPO/image/containers.conf"
SUITE=bookworm
SETUPTOOLS_VERSION=84.2.1
CACHE=${FLEETQ_IMAGE_CACHE:-$HOME/.cache/fleetq/image}
VERSION=$(python3 -c 'import tomllib; print(tomllib.load(open("pyproject.toml","rb"))["project"]["version"])')
IMAGE=localhost/fleetq:$VERSION
ARCHIVE=dist/fleetq-$VERSION.oci.tar
SBOM=dist/fleetq-$VERSION.sbom.json
# The machine's own Debian sources (deb822), pasted into mmdebstrap's apt configuration.
APT_SOURCES=${FLEETQ_APT_SOURCES:-/etc/apt/sources.list.d/debian.sources}

say() { echo "== image: $*"; }
need() {
  command -v "$1" >/dev/null || {
    echo "image/build.sh: $1 is missing; install it with: apt-get install -y podman buildah runc mmdebstrap" >&2
    exit 1
  }
}
need podman
need mmdebstrap
need runc
mkdir -p "$CACHE" dist
exec 9>"$CACHE/.lock"
flock 9  # one build at a time on this machine

# 1. The base: a minimal Debian root filesystem with python3, as a local image.
PACKAGES=$(grep -v '^#' image/base-packages.txt | xargs | tr ' ' ',')
# merged-usr: /usr merged by mmdebstrap's hook, so usrmerge (and perl) stay out.
MMDEBSTRAP_OPTS=(--variant=essential --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
  "--include=$PACKAGES"
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*'
  --dpkgopt='path-exclude=/usr/share/info/*' --dpkgopt='path-exclude=/usr/share/locale/*'
  --customize-hook='rm -rf "$1"/etc/apt/sources.list.d/* "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/*')
KEY=$(printf '%s\n' "$SUITE" "${MMDEBSTRAP_OPTS[@]}" | sha256sum | cut -c1-16)
BASE=localhost/fleetq-base:$KEY
BASE_TAR=$CACHE/base-$KEY.tar
if podman image exists "$BASE"; then
  say "base $BASE (cached image)"
else
  if [[ ! -s $BASE_TAR ]]; then
    say "making the base root filesystem with mmdebstrap ($SUITE: $PACKAGES)"
    sources=()
    [[ -f $APT_SOURCES ]] && sources=("$APT_SOURCES")
    mmdebstrap --quiet --format=tar "${MMDEBSTRAP_OPTS[@]}" "$SUITE" "$BASE_TAR.part" "${sources[@]}"
    mv "$BASE_TAR.part" "$BASE_TAR"
    find "$CACHE" -maxdepth 1 -name 'base-*.tar' ! -name "base-$KEY.tar" -delete  # stale keys
  fi
  say "importing $BASE_TAR as $BASE"
  podman import --quiet "$BASE_TAR" "$BASE" >/dev/null
fi

# 2. The wheels: constraints.txt and the pinned setuptools, for this base's platform
# (CPython 3.11 on glibc amd64, the same as this Debian machine's).
WHEEL_KEY=$( (cat constraints.txt; echo "setuptools==$SETUPTOOLS_VERSION") | sha256sum | cut -c1-16)
WHEELS=$CACHE/wheels-$WHEEL_KEY
if [[ ! -f $WHEELS/.complete ]]; then
  say "downloading wheels into $WHEELS"
  mkdir -p "$WHEELS"
  python3 -m pip download --quiet --only-binary=:all: --no-deps --dest "$WHEELS" \
    --python-version 3.11 --implementation cp --abi cp311 --abi abi3 --abi none \
    --platform manylinux_2_36_x86_64 --platform manylinux_2_34_x86_64 \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform any \
    --requirement constraints.txt "setuptools==$SETUPTOOLS_VERSION"
  touch "$WHEELS/.complete"
  find "$CACHE" -maxdepth 1 -name 'wheels-*' ! -name "wheels-$WHEEL_KEY" -exec rm -rf {} +
fi
find image/wheels -name '*.whl' -delete
cp -l "$WHEELS"/*.whl image/wheels/ 2>/dev/null || cp "$WHEELS"/*.whl image/wheels/

# 3. The image, from the Dockerfile users build elsewhere, with the local base and wheels.
say "building $IMAGE from Dockerfile (base $BASE)"
started=$SECONDS
BUILD_ARGS=(--layers --network host --file Dockerfile
  --build-arg "PYTHON_IMAGE=$BASE" --build-arg PIP_INSTALL_FLAGS=--no-index
  --build-arg "SETUPTOOLS_VERSION=$SETUPTOOLS_VERSION")
# The build stage is tagged too, so its cached layers have a name and the prune below
# removes only what earlier builds left (untagged, unreferenced layers).
podman build "${BUILD_ARGS[@]}" --target build --tag "localhost/fleetq-build:$VERSION" .
podman build "${BUILD_ARGS[@]}" --tag "$IMAGE" .
podman image prune --force >/dev/null
say "built in $((SECONDS - started))s"
find image/wheels -name '*.whl' -delete

# 4. The archive, its size and the bill of materials read from inside the image.
rm -f "$ARCHIVE"
podman save --quiet --format oci-archive --output "$ARCHIVE" "$IMAGE"
podman run --rm -i --network none --entrypoint /opt/fleetq/bin/python "$IMAGE" - \
  <image/sbom.py >"$SBOM"
python3 image/sbom.py --summary "$SBOM"
image_bytes=$(podman image inspect --format '{{.Size}}' "$IMAGE")
say "$IMAGE: $((image_bytes / 1048576)) MiB unpacked; $ARCHIVE: $(($(stat -c %s "$ARCHIVE") / 1048576)) MiB"
say "bill of materials: $SBOM"

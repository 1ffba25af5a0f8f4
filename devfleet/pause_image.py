"""The pod sandbox ("pause") image of a real node, made from the fleetq image's own layers.

containerd starts every pod with a sandbox container whose only job is to hold the pod's
namespaces. No image registry answers here, so upstream's pause image cannot be pulled;
the fleetq archive (`make image`) already holds a Debian root filesystem with
`/bin/sleep`, so the sandbox image is that archive's layers under a new config whose
entrypoint sleeps forever. Written as an OCI archive for `ctr images import`, named
`localhost/fleetq-pause:<version>`; the layers are the same blobs, so containerd stores
them once.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path
from typing import Any

SLEEP_FOREVER = ["/bin/sleep", "infinity"]
REF_NAME = "org.opencontainers.image.ref.name"


class PauseImageError(RuntimeError):
    """The source archive is not a single-manifest OCI archive."""


def pause_reference(version: str) -> str:
    return f"localhost/fleetq-pause:{version}"


def _blob(archive: tarfile.TarFile, digest: str) -> bytes:
    member = archive.extractfile(f"blobs/{digest.replace(':', '/', 1)}")
    if member is None:
        raise PauseImageError(f"blob {digest} missing from the archive")
    return member.read()


def _add(out: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    out.addfile(info, io.BytesIO(data))


def _descriptor(media_type: str, data: bytes) -> dict[str, Any]:
    return {
        "mediaType": media_type,
        "digest": "sha256:" + hashlib.sha256(data).hexdigest(),
        "size": len(data),
    }


def write_pause_archive(source: Path, target: Path, reference: str) -> Path:
    """An OCI archive at `target`: `source`'s layers, entrypoint `sleep infinity`."""
    with tarfile.open(source) as archive:
        index = json.loads(_blob_or_file(archive, "index.json"))
        manifests = index.get("manifests", [])
        if len(manifests) != 1:
            raise PauseImageError(f"{source}: expected one manifest, found {len(manifests)}")
        manifest = json.loads(_blob(archive, manifests[0]["digest"]))
        config = json.loads(_blob(archive, manifest["config"]["digest"]))
        config.setdefault("config", {})
        config["config"]["Entrypoint"] = SLEEP_FOREVER
        config["config"].pop("Cmd", None)
        config_bytes = json.dumps(config, separators=(",", ":")).encode()
        manifest["config"] = _descriptor(manifest["config"]["mediaType"], config_bytes)
        manifest_bytes = json.dumps(manifest, separators=(",", ":")).encode()
        new_index = {
            "schemaVersion": 2,
            "manifests": [
                {
                    **_descriptor(manifests[0]["mediaType"], manifest_bytes),
                    "annotations": {REF_NAME: reference},
                }
            ],
        }
        target.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(target, "w") as out:
            _add(out, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
            _add(out, "index.json", json.dumps(new_index).encode())
            for data in (config_bytes, manifest_bytes):
                _add(out, f"blobs/sha256/{hashlib.sha256(data).hexdigest()}", data)
            for layer in manifest["layers"]:
                name = f"blobs/{layer['digest'].replace(':', '/', 1)}"
                member = archive.getmember(name)
                out.addfile(member, archive.extractfile(member))
    return target


def _blob_or_file(archive: tarfile.TarFile, name: str) -> bytes:
    member = archive.extractfile(name)
    if member is None:
        raise PauseImageError(f"{name} missing from the archive")
    return member.read()

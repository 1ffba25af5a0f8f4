"""The pure parts of a real node: the pause image, kwok's node selection, the hub's values."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

import yaml

from devfleet.containerd_runtime import Containerd
from devfleet.kubelet_process import REAL_NODE_LABEL, Kubelet
from devfleet.kwokctl import Kwokctl
from devfleet.node_network import PodNetwork
from devfleet.pause_image import write_pause_archive
from devfleet.real_node import RealNodeInfo
from devfleet.real_node_hub import hub_values


def _blob(data: bytes) -> tuple[str, bytes]:
    return "sha256:" + hashlib.sha256(data).hexdigest(), data


def _oci_archive(path: Path) -> str:
    """A one-layer OCI archive like podman's; the layer's digest."""
    layer_digest, layer = _blob(b"layer-bytes")
    config_digest, config = _blob(
        json.dumps(
            {"config": {"Entrypoint": ["fleetq"], "Cmd": ["--help"], "User": "65532"}}
        ).encode()
    )
    manifest = {
        "schemaVersion": 2,
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "digest": config_digest,
            "size": len(config),
        },
        "layers": [
            {
                "mediaType": "application/vnd.oci.image.layer.v1.tar",
                "digest": layer_digest,
                "size": len(layer),
            }
        ],
    }
    manifest_digest, manifest_bytes = _blob(json.dumps(manifest).encode())
    index = {
        "schemaVersion": 2,
        "manifests": [
            {
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": manifest_digest,
                "size": len(manifest_bytes),
                "annotations": {"org.opencontainers.image.ref.name": "localhost/fleetq:1.2.3"},
            }
        ],
    }
    with tarfile.open(path, "w") as out:
        for name, data in [
            ("index.json", json.dumps(index).encode()),
            *[
                (f"blobs/{d.replace(':', '/')}", b)
                for d, b in [
                    (layer_digest, layer),
                    (config_digest, config),
                    (manifest_digest, manifest_bytes),
                ]
            ],
        ]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            out.addfile(info, io.BytesIO(data))
    return layer_digest


def test_the_pause_image_keeps_the_layers_and_only_sleeps(tmp_path: Path) -> None:
    layer = _oci_archive(tmp_path / "fleetq.oci.tar")
    target = write_pause_archive(
        tmp_path / "fleetq.oci.tar", tmp_path / "pause.oci.tar", "localhost/fleetq-pause:1.2.3"
    )
    with tarfile.open(target) as archive:
        index = json.load(archive.extractfile("index.json"))  # type: ignore[arg-type]
        (entry,) = index["manifests"]
        assert entry["annotations"]["org.opencontainers.image.ref.name"] == (
            "localhost/fleetq-pause:1.2.3"
        )

        def blob(digest: str) -> bytes:
            data = archive.extractfile(f"blobs/{digest.replace(':', '/')}").read()  # type: ignore[union-attr]
            assert "sha256:" + hashlib.sha256(data).hexdigest() == digest  # content-addressed
            return data

        manifest = json.loads(blob(entry["digest"]))
        config = json.loads(blob(manifest["config"]["digest"]))
        assert [layer_ref["digest"] for layer_ref in manifest["layers"]] == [layer]
        assert blob(layer) == b"layer-bytes"
    assert config["config"]["Entrypoint"] == ["/bin/sleep", "infinity"]
    assert "Cmd" not in config["config"]
    assert config["config"]["User"] == "65532"


def test_kwok_manages_only_annotated_nodes_and_the_apiserver_gets_extra_sans(
    tmp_path: Path,
) -> None:
    kwokctl = Kwokctl(tmp_path)
    path = kwokctl.write_config("m", list(range(20001, 20007)), [], cert_sans=["192.0.2.9"])
    (config,) = list(yaml.safe_load_all(path.read_text()))
    assert config["options"]["kubeApiserverCertSANs"] == ["192.0.2.9"]
    (patch,) = config["componentsPatches"]
    assert patch["name"] == "kwok-controller"
    args = {a["key"]: (a["value"], a.get("override", False)) for a in patch["extraArgs"]}
    assert args["manage-all-nodes"] == ("false", True)
    assert args["manage-nodes-with-annotation-selector"][0] == "kwok.x-k8s.io/node=fake"


def test_the_hub_values_pin_the_pods_to_the_real_node_with_the_imported_image() -> None:
    node = RealNodeInfo("real-node-0", "192.0.2.9", 23456, "localhost/fleetq:1.2.3", "p:1")
    values = hub_values(node, log_level="debug", pod_annotations={"a": "b"})
    assert values["image"] == {
        "repository": "localhost/fleetq",
        "tag": "1.2.3",
        "pullPolicy": "Never",
    }
    assert values["nodeSelector"] == {REAL_NODE_LABEL: "true"}
    assert values["tolerations"][0]["key"] == REAL_NODE_LABEL
    env = {e["name"]: e["value"] for e in values["extraEnv"]}
    assert env == {"KUBERNETES_SERVICE_HOST": "192.0.2.9", "KUBERNETES_SERVICE_PORT": "23456"}
    assert (values["replicas"], values["logLevel"], values["podAnnotations"]) == (
        2,
        "debug",
        {"a": "b"},
    )


def test_the_kubelet_is_tainted_for_the_hub_and_containerd_restricts_oom_score_adj(
    tmp_path: Path,
) -> None:
    kubelet = Kubelet(tmp_path, "n", "192.0.2.9", tmp_path / "k", tmp_path / "ca", "unix:///s", 1)
    config = kubelet.configuration()
    assert config["registerWithTaints"] == [
        {"key": REAL_NODE_LABEL, "value": "true", "effect": "NoSchedule"}
    ]
    assert config["cgroupDriver"] == "cgroupfs" and config["failCgroupV1"] is False
    assert config["imageGCHighThresholdPercent"] == 100  # imported images cannot be pulled
    toml = Containerd(tmp_path, PodNetwork(), "localhost/fleetq-pause:1").config()
    assert "restrict_oom_score_adj = true" in toml
    assert 'sandbox_image = "localhost/fleetq-pause:1"' in toml
    assert f'address = "{tmp_path / "containerd.sock"}"' in toml

"""The kwok stages our fake clusters run: how fake nodes and pods move through their lives.

kwokctl's built-in "fast" pod stages finish a Job's pod the moment it runs, which is useless
for watching a queue drain. We run kwok's *general* pod stages instead, which honour
per-pod annotations such as `pod-complete.stage.kwok.x-k8s.io/delay: 30s`, so a job can
ask how long its pods "run". When kwokctl is given any stage it drops all of its defaults,
so the node stages are listed here too.

The stage definitions are kwok's own, read at run time from the kwok Go module that
`make tools` downloads (nothing is copied into this repository). One change is ours: kwok's
pod-complete stage finishes only pods a batch/v1 Job owns, so the owner kinds of
`COMPLETING_OWNER_KINDS` (operators that own their pods directly, such as the Kubeflow
training operator's jobs) are added to it, and their pods finish the same way. And pods
of upstream's agnhost test image are played as a kubelet would run them
(devfleet.agnhost_player): `netexec` pods serve until deleted or told to exit.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, Final

import yaml

from devfleet.agnhost_player import (
    EXIT_STAGE,
    exit_fast_stage,
    keep_serving_pods_running,
    termination_stages,
)
from devfleet.toolchain import KWOK_VERSION, tool

RUN_DURATION_ANNOTATION = "pod-complete.stage.kwok.x-k8s.io/delay"
"""Annotation on a pod (template) saying how long it runs before it succeeds, e.g. "30s"."""

RUN_JITTER_ANNOTATION = "pod-complete.stage.kwok.x-k8s.io/jitter-delay"
"""kwok draws the run time between the delay and this jitter delay (5 s when absent, which
caps longer runs): set it to the same value for an exact run time."""

COMPLETING_OWNER_KINDS: Final = ("PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob")
"""Pod owner kinds whose pods kwok finishes after their run time, besides `Job`."""
POD_COMPLETE_STAGE = "kustomize/stage/pod/general/pod-complete.yaml"
_OWNER_KIND_KEY = ".metadata.ownerReferences.[].kind"

_STAGE_FILES = (
    "kustomize/stage/node/fast/node-initialize.yaml",
    "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "kustomize/stage/pod/general/pod-create.yaml",
    "kustomize/stage/pod/general/pod-init-container-running.yaml",
    "kustomize/stage/pod/general/pod-init-container-completed.yaml",
    "kustomize/stage/pod/general/pod-ready.yaml",
    "kustomize/stage/pod/general/pod-complete.yaml",
    "kustomize/stage/pod/general/pod-delete.yaml",
)


class StageFilesMissing(RuntimeError):
    """The kwok module (and so its stage files) is not in the Go module cache."""


def run_for(seconds: float) -> dict[str, str]:
    """Pod annotations that make kwok finish the pod `seconds` after it starts running."""
    return {RUN_DURATION_ANNOTATION: f"{seconds:g}s", RUN_JITTER_ANNOTATION: f"{seconds:g}s"}


def kwok_module_dir() -> Path:
    """Locate sigs.k8s.io/kwok in the Go module cache (downloading it if needed)."""
    env = dict(os.environ, GOTOOLCHAIN=os.environ.get("GOTOOLCHAIN", "local"))
    done = subprocess.run(
        ["go", "mod", "download", "-json", f"sigs.k8s.io/kwok@{KWOK_VERSION}"],
        cwd=tool("kwok").module_dir,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise StageFilesMissing(
            f"cannot locate the kwok {KWOK_VERSION} module: {done.stderr.strip()[-500:]}"
        )
    return Path(json.loads(done.stdout)["Dir"])


def stage_documents() -> list[str]:
    """The YAML documents of the node and pod stages, read from the kwok module."""
    module = kwok_module_dir()
    documents = []
    for relative in _STAGE_FILES:
        path = module / relative
        if not path.exists():
            raise StageFilesMissing(f"kwok stage file missing from the module: {path}")
        text = path.read_text().strip()
        if relative == POD_COMPLETE_STAGE:
            complete = keep_serving_pods_running(with_owner_kinds(text, COMPLETING_OWNER_KINDS))
            text = _dump(complete)
            documents.append(_dump(exit_fast_stage(complete, _OWNER_KIND_KEY)))
        documents.append(text)
    documents += [_dump(stage) for stage in (EXIT_STAGE, *termination_stages())]
    return documents


def with_owner_kinds(stage: str, kinds: tuple[str, ...]) -> dict[str, Any]:
    """The pod-complete stage with `kinds` added to the pod owner kinds it selects."""
    document: dict[str, Any] = yaml.safe_load(stage)
    expressions = document["spec"]["selector"]["matchExpressions"]
    owner = next((e for e in expressions if e.get("key") == _OWNER_KIND_KEY), None)
    if owner is None:
        raise StageFilesMissing(f"kwok's pod-complete stage selects no owner kind: {stage[:300]}")
    owner["values"] = [*owner["values"], *(k for k in kinds if k not in owner["values"])]
    return document


def _dump(document: dict[str, Any]) -> str:
    return yaml.dump(document, Dumper=_LiteralDumper, sort_keys=False).strip()


class _LiteralDumper(yaml.SafeDumper):
    """Multi-line strings (the stages' Go templates) as `|` blocks, as kwok writes them."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_LiteralDumper.add_representer(str, _represent_str)

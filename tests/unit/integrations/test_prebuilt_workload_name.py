"""Which Workload a job must run under: upstream v0.19 names it by annotation, v0.17 by label."""

from __future__ import annotations

from typing import Any

import pytest

from integrations.framework.job_metadata import prebuilt_workload_name

KEY = "kueue.x-k8s.io/prebuilt-workload-name"


def job(labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None) -> Any:
    metadata: dict[str, Any] = {"name": "j", "namespace": "ns"}
    if labels is not None:
        metadata["labels"] = labels
    if annotations is not None:
        metadata["annotations"] = annotations
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata}


@pytest.mark.parametrize(
    ("labels", "annotations", "expected"),
    [
        ({KEY: "wl-label"}, None, "wl-label"),  # v0.17's manager, fleetq's hub
        (None, {KEY: "wl-annotation"}, "wl-annotation"),  # v0.19's manager
        ({KEY: "wl-label"}, {KEY: "wl-annotation"}, "wl-annotation"),  # upstream reads it first
        ({KEY: "wl-label"}, {KEY: ""}, "wl-label"),  # an empty annotation falls back
        ({"other": "x"}, {"other": "y"}, None),
    ],
)
def test_the_annotation_wins_and_the_label_is_the_fallback(
    labels: dict[str, str] | None, annotations: dict[str, str] | None, expected: str | None
) -> None:
    assert prebuilt_workload_name(job(labels, annotations)) == expected

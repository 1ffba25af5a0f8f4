"""Upstream's annotations for elastic jobs (ElasticJobsViaWorkloadSlices), one definition.

A job opts in with `kueue.x-k8s.io/elastic-job: "true"`; its Workloads carry the same
annotation, the name of the first slice of the chain (`workload-slice-name`) and, on a
slice created by a scale-up, the `namespace/name` of the slice it replaces.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

ELASTIC_JOB_ANNOTATION: Final = "kueue.x-k8s.io/elastic-job"
ELASTIC_JOB_ENABLED: Final = "true"
REPLACEMENT_FOR_ANNOTATION: Final = "kueue.x-k8s.io/workload-slice-replacement-for"
SLICE_NAME_ANNOTATION: Final = "kueue.x-k8s.io/workload-slice-name"
REPLACED_MESSAGE: Final = "Replaced to accommodate a new workload slice"
"""The Finished message of a slice another replaced (WorkloadSliceReplaced), as upstream."""
OUT_OF_SYNC_MESSAGE: Final = "The workload slice is out of sync with its parent job"


def elastic(obj: Mapping[str, Any]) -> bool:
    """Whether the object (a job or a Workload) opted in to workload slices."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return annotations.get(ELASTIC_JOB_ANNOTATION) == ELASTIC_JOB_ENABLED


def replacement_for(obj: Mapping[str, Any]) -> str | None:
    """`namespace/name` of the slice this Workload replaces, or None."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(REPLACEMENT_FOR_ANNOTATION)
    return str(value) if value else None

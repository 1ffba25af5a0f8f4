"""The RayJob's submitter, as upstream counts it.

In K8sJobMode (KubeRay's default) KubeRay runs `ray job submit` from a separate batch Job:
one more pod, which upstream queues as the last pod set, `submitter`, from
`spec.submitterPodTemplate` or, without one, KubeRay's default template (one container
`ray-job-submitter` with the head's first image, 500m CPU / 200Mi requested, 1 CPU / 1Gi
limit, restartPolicy Never). In SidecarMode KubeRay adds that container, with the same
default resources whatever the template says, to the head pod instead, so upstream adds
it to the head's pod set. HTTPMode and InteractiveMode run no submitter.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from integrations.framework.job_metadata import Job, section, spec
from integrations.ray import ray_fields as fields

SUBMITTER_POD_SET: Final = "submitter"
SUBMITTER_CONTAINER: Final = "ray-job-submitter"
K8S_JOB_MODE: Final = "K8sJobMode"
SIDECAR_MODE: Final = "SidecarMode"
_SUBMITTER_RESOURCES: Final = {
    "limits": {"cpu": "1", "memory": "1Gi"},
    "requests": {"cpu": "500m", "memory": "200Mi"},
}


def submission_mode(rayjob: Job) -> str:
    """spec.submissionMode; the CRD defaults it to K8sJobMode."""
    return str(spec(rayjob).get("submissionMode") or K8S_JOB_MODE)


def has_submitter_pod_set(rayjob: Job) -> bool:
    return submission_mode(rayjob) == K8S_JOB_MODE


def default_submitter_template(rayjob: Job) -> dict[str, Any]:
    """KubeRay's submitter pod template when the RayJob names none."""
    containers = section(fields.head_template(fields.nested_cluster_spec(rayjob)), "spec").get(
        "containers"
    )
    first = containers[0] if isinstance(containers, list) and containers else {}
    image = first.get("image") if isinstance(first, Mapping) else None
    container: dict[str, Any] = {"name": SUBMITTER_CONTAINER}
    if image:
        container["image"] = image
    container["resources"] = copy.deepcopy(_SUBMITTER_RESOURCES)
    return {"spec": {"containers": [container], "restartPolicy": "Never"}}


def submitter_template(rayjob: Job) -> dict[str, Any]:
    """spec.submitterPodTemplate, or KubeRay's default (a copy either way)."""
    template = spec(rayjob).get("submitterPodTemplate")
    if isinstance(template, Mapping):
        return copy.deepcopy(dict(template))
    return default_submitter_template(rayjob)


def sidecar_container() -> dict[str, Any]:
    """The submitter container KubeRay adds to the head pod in SidecarMode."""
    return {"name": SUBMITTER_CONTAINER, "resources": copy.deepcopy(_SUBMITTER_RESOURCES)}

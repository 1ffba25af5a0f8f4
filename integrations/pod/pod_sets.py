"""The pod set a plain Pod is queued as, as upstream builds it.

One pod set named `main` of one pod whose template is the Pod's spec (upstream copies the
spec only, not the Pod's labels or annotations). A topology request on the Pod's own
annotations is read with upstream's pod-group pod-index label as the pod index.
"""

from __future__ import annotations

import copy
from typing import Final

from core.api.workload import PodSet
from integrations.framework.env_deduplication import fold_duplicate_env
from integrations.framework.job_metadata import Job, spec
from integrations.framework.topology_request import topology_request_from_template
from integrations.pod.pod_fields import DEFAULT_POD_SET_NAME

POD_GROUP_POD_INDEX_LABEL: Final = "kueue.x-k8s.io/pod-group-pod-index"


def pod_pod_sets(pod: Job) -> list[PodSet]:
    """The Pod's one pod set (see module docstring).

    Raises `InvalidTopologyRequest` when a topology annotation cannot be read."""
    template = fold_duplicate_env({"spec": copy.deepcopy(dict(spec(pod)))})
    request = topology_request_from_template(pod)
    if request is not None:
        request.pod_index_label = POD_GROUP_POD_INDEX_LABEL
    return [PodSet(name=DEFAULT_POD_SET_NAME, template=template, count=1, topology_request=request)]

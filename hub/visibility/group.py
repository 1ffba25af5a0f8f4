"""Names of the visibility API group: its versions, resources and kinds.

Both versions serve identical objects; only `apiVersion` differs, so one set of types
serves both and the version travels as a value.
"""

from __future__ import annotations

from enum import StrEnum

GROUP = "visibility.kueue.x-k8s.io"
SUMMARY_KIND = "PendingWorkloadsSummary"
PENDING_WORKLOADS = "pendingworkloads"


class VisibilityVersion(StrEnum):
    """Served versions, preferred first (the order discovery lists them in)."""

    V1BETA2 = "v1beta2"
    V1BETA1 = "v1beta1"

    @property
    def group_version(self) -> str:
        return f"{GROUP}/{self.value}"


PREFERRED_VERSION = VisibilityVersion.V1BETA2


class QueueResource(StrEnum):
    """The queue kinds that carry a `pendingworkloads` subresource (singular names).

    Upstream names these in NotFound errors, e.g. `clusterqueue.visibility.kueue.x-k8s.io`.
    """

    CLUSTER_QUEUE = "clusterqueue"
    LOCAL_QUEUE = "localqueue"

    @property
    def plural(self) -> str:
        return f"{self.value}s"

    @property
    def namespaced(self) -> bool:
        return self is QueueResource.LOCAL_QUEUE

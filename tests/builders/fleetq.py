"""fleetq.dev/v1alpha1 kinds of our own."""

from __future__ import annotations

from typing import Self

from tests.builders.base import ObjectBuilder


class WorkerCapacity(ObjectBuilder):
    """The capacity report a worker agent publishes; its figures are status, written
    through the status subresource after creation."""

    api_version = "fleetq.dev/v1alpha1"
    kind = "WorkerCapacity"

    def cluster_name(self, cluster: str) -> Self:
        return self.spec(clusterName=cluster)

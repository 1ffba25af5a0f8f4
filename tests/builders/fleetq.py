"""fleetq.dev/v1alpha1 kinds of our own."""

from __future__ import annotations

from typing import Any, Self

from tests.builders.base import ObjectBuilder


class WorkerCapacity(ObjectBuilder):
    """The capacity report a worker agent publishes; its figures are status, written
    through the status subresource after creation."""

    api_version = "fleetq.dev/v1alpha1"
    kind = "WorkerCapacity"

    def cluster_name(self, cluster: str) -> Self:
        return self.spec(clusterName=cluster)


class MultiKueueClusterSet(ObjectBuilder):
    """MultiKueue workers of any number, listed by name and/or selected by label."""

    api_version = "fleetq.dev/v1alpha1"
    kind = "MultiKueueClusterSet"

    def clusters(self, *clusters: str) -> Self:
        return self.spec(clusters=list(clusters))

    def selector(self, match_labels: dict[str, str] | None = None, *expressions: Any) -> Self:
        """`clusterSelector` with these labels and matchExpressions (wire form)."""
        selector: dict[str, Any] = {}
        if match_labels is not None:
            selector["matchLabels"] = dict(match_labels)
        if expressions:
            selector["matchExpressions"] = list(expressions)
        return self.spec(clusterSelector=selector)

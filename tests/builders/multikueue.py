"""MultiKueueCluster and MultiKueueConfig: the workers a MultiKueue check dispatches to."""

from __future__ import annotations

from typing import Self

from tests.builders.base import KUEUE_API_VERSION, ObjectBuilder, without_none


class MultiKueueCluster(ObjectBuilder):
    """A worker, reached through a kubeconfig (by default in a Secret of the hub's
    namespace)."""

    api_version = KUEUE_API_VERSION
    kind = "MultiKueueCluster"

    def kubeconfig(self, location: str, location_type: str | None = None) -> Self:
        """`location_type` "Secret" or "Path"; `None` leaves it to the default (Secret)."""
        kubeconfig = without_none(location=location, locationType=location_type)
        return self.spec(clusterSource={"kubeConfig": kubeconfig})


class MultiKueueConfig(ObjectBuilder):
    api_version = KUEUE_API_VERSION
    kind = "MultiKueueConfig"

    def clusters(self, *clusters: str) -> Self:
        return self.spec(clusters=list(clusters))

"""AdmissionCheck: a gate a ClusterQueue's workloads pass before Admitted.

Also the model of a kind's builder: subclass `ObjectBuilder`, say `api_version` and
`kind`, add one method per field tests set.
"""

from __future__ import annotations

from typing import Self

from tests.builders.base import KUEUE_API_VERSION, MULTIKUEUE_CONTROLLER, ObjectBuilder


class AdmissionCheck(ObjectBuilder):
    """A check with no controller until `controller_name` or `multikueue` names one; its
    Active condition (written by that controller) goes through `condition`."""

    api_version = KUEUE_API_VERSION
    kind = "AdmissionCheck"

    def controller_name(self, controller: str) -> Self:
        return self.spec(controllerName=controller)

    def parameters(self, api_group: str, kind: str, name: str) -> Self:
        return self.spec(parameters={"apiGroup": api_group, "kind": kind, "name": name})

    def multikueue(self, config: str) -> Self:
        """MultiKueue's check, dispatching to the workers of MultiKueueConfig `config`."""
        return self.controller_name(MULTIKUEUE_CONTROLLER).parameters(
            "kueue.x-k8s.io", "MultiKueueConfig", config
        )

    def multikueue_set(self, cluster_set: str) -> Self:
        """MultiKueue's check, dispatching to the members of MultiKueueClusterSet `cluster_set`."""
        return self.controller_name(MULTIKUEUE_CONTROLLER).parameters(
            "fleetq.dev", "MultiKueueClusterSet", cluster_set
        )

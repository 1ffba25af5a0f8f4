"""What a MultiKueue AdmissionCheck's parameters name: a MultiKueueConfig or a fleetq set.

Upstream accepts only `{apiGroup: kueue.x-k8s.io, kind: MultiKueueConfig}`; fleetq also
accepts `{apiGroup: fleetq.dev, kind: MultiKueueClusterSet}` for lists of more than 20
clusters. Anything else is a bad reference, in upstream's words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from core.api.admission_check import AdmissionCheck
from core.api.groups import FLEETQ_GROUP, KUEUE_GROUP
from core.api.multikueue import MULTIKUEUE_CONFIG_KIND
from core.api.multikueue_cluster_set import MULTIKUEUE_CLUSTER_SET_KIND

KIND_OF_GROUP: Final = {
    KUEUE_GROUP: MULTIKUEUE_CONFIG_KIND,
    FLEETQ_GROUP: MULTIKUEUE_CLUSTER_SET_KIND,
}
"""The one kind of each accepted group that can hold a check's clusters."""


@dataclass(frozen=True, slots=True)
class ClusterListRef:
    """A MultiKueueConfig or MultiKueueClusterSet, by kind and name."""

    kind: str
    name: str

    @property
    def group(self) -> str:
        return KUEUE_GROUP if self.kind == MULTIKUEUE_CONFIG_KIND else FLEETQ_GROUP

    @property
    def key(self) -> str:
        """Index key, distinct for a config and a set of the same name."""
        return f"{self.kind}/{self.name}"


def parameters_problem(check: AdmissionCheck) -> str | None:
    """Why the check's parameters name no cluster list (upstream's words for its kind)."""
    ref = check.spec.parameters
    if ref is None:
        return "missing parameters reference"
    if not ref.name:
        return "empty name: bad parameters reference"
    expected_kind = KIND_OF_GROUP.get(ref.api_group)
    if expected_kind is None:
        return f'wrong group "{ref.api_group}", expecting "{KUEUE_GROUP}": bad parameters reference'
    if ref.kind != expected_kind:
        return f'wrong kind "{ref.kind}", expecting "{expected_kind}": bad parameters reference'
    return None


def cluster_list_reference(check: AdmissionCheck) -> ClusterListRef | None:
    """The config or set a check's parameters point at, if they validly do."""
    if parameters_problem(check) is not None or check.spec.parameters is None:
        return None
    return ClusterListRef(check.spec.parameters.kind, check.spec.parameters.name)

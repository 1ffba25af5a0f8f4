"""What a job integration applies to its pods once a workload is admitted.

Each assigned flavor's `nodeLabels` join the pod set's nodeSelector and its
`tolerations` are appended, so kube-scheduler places the pods on that flavor's nodes.
Admission checks may contribute their own updates (`podSetUpdates`) the same way. A key
that two sources set to different values is a conflict the job cannot satisfy; it is
reported, never silently overwritten. The originals are restored by the integration
when the job is suspended again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from core.engine.model import Admission, ResourceFlavor, Toleration


class PodSetUpdateConflict(ValueError):
    """Two sources want different values for one nodeSelector key of a pod set."""


@dataclass(slots=True)
class PodSetUpdate:
    """Additions for one pod set: nodeSelector entries and extra tolerations."""

    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[Toleration] = field(default_factory=list)

    def merge_selector(self, pod_set: str, source: str, labels: Mapping[str, str]) -> None:
        for key, value in labels.items():
            have = self.node_selector.get(key)
            if have is not None and have != value:
                raise PodSetUpdateConflict(
                    f"pod set {pod_set}: {source} sets nodeSelector {key}={value}, "
                    f"but {key}={have} is already required"
                )
            self.node_selector[key] = value

    def add_tolerations(self, tolerations: Iterable[Toleration]) -> None:
        for toleration in tolerations:
            if toleration not in self.tolerations:
                self.tolerations.append(toleration)


def pod_set_updates(
    admission: Admission,
    flavors: Mapping[str, ResourceFlavor],
    base_node_selectors: Mapping[str, Mapping[str, str]] | None = None,
) -> dict[str, PodSetUpdate]:
    """Per pod set, the nodeSelector entries and tolerations its flavors add.

    `base_node_selectors` (pod set -> the template's own nodeSelector) lets conflicts with
    what the job already asks for surface here instead of as unschedulable pods.
    """
    out: dict[str, PodSetUpdate] = {}
    for psa in admission.pod_set_assignments:
        update = PodSetUpdate()
        base = (base_node_selectors or {}).get(psa.name, {})
        update.merge_selector(psa.name, "the pod template", base)
        for flavor_name in sorted(set(psa.flavors.values())):
            flavor = flavors.get(flavor_name)
            if flavor is None:
                continue
            update.merge_selector(psa.name, f"flavor {flavor_name}", flavor.node_labels)
            update.add_tolerations(flavor.tolerations)
        for key in base:
            update.node_selector.pop(key, None)
        out[psa.name] = update
    return out

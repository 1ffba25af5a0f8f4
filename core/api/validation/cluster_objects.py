"""Cross-field rules of cluster-scoped configuration kinds: flavors, checks, MultiKueue,
topologies."""

from __future__ import annotations

from core.api.admission_check import AdmissionCheck
from core.api.multikueue import MultiKueueCluster, MultiKueueConfig
from core.api.multikueue_cluster_set import MultiKueueClusterSet
from core.api.resource_flavor import ResourceFlavor
from core.api.topology import HOSTNAME_LABEL, Topology
from core.api.validation.field_errors import ROOT, FieldError, duplicate, invalid, required
from core.api.validation.labels import validate_label_selector, validate_labels
from core.api.validation.placement import validate_taints, validate_tolerations


def validate_resource_flavor(rf: ResourceFlavor) -> list[FieldError]:
    path = ROOT.child("spec")
    errors = validate_labels(rf.spec.node_labels, path.child("nodeLabels"))
    errors += validate_taints(rf.spec.node_taints, path.child("nodeTaints"))
    errors += validate_tolerations(rf.spec.tolerations, path.child("tolerations"))
    if rf.spec.topology_name is not None and not rf.spec.node_labels:
        errors.append(
            required(path.child("nodeLabels"), "at least one label is needed with topologyName")
        )
    return errors


def validate_resource_flavor_update(old: ResourceFlavor, new: ResourceFlavor) -> list[FieldError]:
    errors = validate_resource_flavor(new)
    if old.spec.topology_name is None:
        return errors
    path = ROOT.child("spec")
    if new.spec.topology_name != old.spec.topology_name:
        errors.append(invalid(path.child("topologyName"), "cannot change or be removed once set"))
    if new.spec.node_labels != old.spec.node_labels:
        errors.append(invalid(path.child("nodeLabels"), "cannot change while topologyName is set"))
    if new.spec.tolerations != old.spec.tolerations:
        errors.append(invalid(path.child("tolerations"), "cannot change while topologyName is set"))
    return errors


def validate_admission_check_update(old: AdmissionCheck, new: AdmissionCheck) -> list[FieldError]:
    if new.spec.controller_name != old.spec.controller_name:
        return [
            invalid(
                ROOT.child("spec", "controllerName"),
                f"cannot be changed (was {old.spec.controller_name!r})",
            )
        ]
    return []


def validate_multikueue_cluster(cluster: MultiKueueCluster) -> list[FieldError]:
    source = cluster.spec.cluster_source
    path = ROOT.child("spec", "clusterSource")
    set_fields = [
        name
        for name, value in (
            ("kubeConfig", source.kube_config),
            ("clusterProfileRef", source.cluster_profile_ref),
        )
        if value is not None
    ]
    if len(set_fields) != 1:
        shown = " and ".join(set_fields) if set_fields else "neither"
        return [
            invalid(
                path,
                f"exactly one of kubeConfig and clusterProfileRef must be set, got {shown}",
            )
        ]
    return []


def validate_multikueue_config(config: MultiKueueConfig) -> list[FieldError]:
    # Size (1..20) and uniqueness come from the schema markers; only emptiness of names here.
    errors: list[FieldError] = []
    for position, name in enumerate(config.spec.clusters):
        if not name:
            errors.append(required(ROOT.child("spec", "clusters").index(position)))
    return errors


def validate_multikueue_cluster_set(cluster_set: MultiKueueClusterSet) -> list[FieldError]:
    """The set lists or selects (its schema's rule), names are not empty, and the selector
    is one a cluster could match (the schema keeps metav1's shape, so an unknown operator
    gets past the apiserver)."""
    path = ROOT.child("spec")
    spec = cluster_set.spec
    if not spec.clusters and spec.cluster_selector is None:
        return [required(path, "at least one of clusters and clusterSelector must be set")]
    errors = [
        required(path.child("clusters").index(position))
        for position, name in enumerate(spec.clusters)
        if not name
    ]
    errors += validate_label_selector(spec.cluster_selector, path.child("clusterSelector"))
    return errors


def validate_topology(topology: Topology) -> list[FieldError]:
    levels = topology.spec.levels
    path = ROOT.child("spec", "levels")
    errors: list[FieldError] = []
    seen: dict[str, int] = {}
    for position, level in enumerate(levels):
        if level.node_label in seen:
            errors.append(
                duplicate(
                    path.index(position),
                    f"{level.node_label!r} is already level {seen[level.node_label]}",
                )
            )
        seen.setdefault(level.node_label, position)
        if level.node_label == HOSTNAME_LABEL and position != len(levels) - 1:
            errors.append(
                invalid(path.index(position), f"{HOSTNAME_LABEL} may only be the lowest level")
            )
    return errors


def validate_topology_update(old: Topology, new: Topology) -> list[FieldError]:
    errors = validate_topology(new)
    if new.spec.levels != old.spec.levels:
        errors.append(invalid(ROOT.child("spec", "levels"), "cannot be changed"))
    return errors

"""The shape of a pod template inside a Workload: what the apiserver must refuse.

A Workload's `podSets[].template` stays raw JSON at run time (the engine reads a handful
of fields and passes the rest on unchanged, see `core.engine.pod_templates`). These
structs are never decoded into; they only describe the template's schema, through the
`shape` marker on `PodTemplateSpec`, so that the CRD generator and the Python twin of the
apiserver's validation (`core.api.validation.schema_rules`) refuse a template fleetq
could not read: a template or spec that is not an object, a spec without `containers`,
requests and limits that are not quantities.

Every field typed here has the type upstream's CRD gives it (upstream types the whole
PodTemplateSpec); the objects that hold fields fleetq does not model (the pod spec, a
container, affinity) keep those fields as they are written.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Final

from core.api.api_struct import ApiStruct
from core.api.core_v1 import ResourceList, Toleration
from core.api.markers import SchemaMarkers, constrain, doc

__all__ = [
    "Container",
    "PodSpec",
    "PodTemplateMeta",
    "PodTemplateShape",
    "PodTemplateSpec",
    "ResourceRequirements",
]

_PASS_THROUGH: Final[SchemaMarkers] = {"preserve_unknown": True}


class ResourceClaim(ApiStruct):
    """A resource claim of the pod that a container uses."""

    name: Annotated[str, doc("Name of an entry in the pod's resourceClaims.", required=True)]
    request: Annotated[str | None, doc("Request of that claim; empty for all of it.")] = None


class ResourceRequirements(ApiStruct):
    """Compute resources of a container (or, pod-level, of the whole pod)."""

    claims: Annotated[
        list[ResourceClaim],
        doc("Resource claims used.", list_type="map", list_map_keys=("name",)),
    ] = []
    limits: Annotated[ResourceList, doc("Most of each resource that may be used.")] = {}
    requests: Annotated[ResourceList, doc("Least of each resource needed; what quota counts.")] = {}


class Container(ApiStruct):
    """A container of the pod; fields other than these pass through unchanged."""

    schema_markers: ClassVar[SchemaMarkers] = _PASS_THROUGH

    name: Annotated[str, doc("Name of the container, unique in the pod.", required=True)]
    resources: Annotated[
        ResourceRequirements | None, doc("Compute resources the container needs.")
    ] = None
    restart_policy: Annotated[
        str | None, doc("Always makes an init container a sidecar that keeps running.")
    ] = None


class NodeSelectorRequirement(ApiStruct):
    """One `key operator values` test on node labels or fields."""

    key: Annotated[str, doc("Label key (or field name) tested.", required=True)]
    operator: Annotated[str, doc("In, NotIn, Exists, DoesNotExist, Gt or Lt.", required=True)]
    values: Annotated[list[str], doc("Values to compare with.", list_type="atomic")] = []


class NodeSelectorTerm(ApiStruct):
    """Requirements a node must all meet."""

    schema_markers: ClassVar[SchemaMarkers] = {"map_type": "atomic"}

    match_expressions: Annotated[
        list[NodeSelectorRequirement],
        doc("Requirements on node labels.", list_type="atomic"),
    ] = []
    match_fields: Annotated[
        list[NodeSelectorRequirement],
        doc("Requirements on node fields.", list_type="atomic"),
    ] = []


class NodeSelector(ApiStruct):
    """Terms of which a node must meet at least one."""

    schema_markers: ClassVar[SchemaMarkers] = {"map_type": "atomic"}

    node_selector_terms: Annotated[
        list[NodeSelectorTerm],
        doc("The terms, ORed.", required=True, list_type="atomic"),
    ]


class NodeAffinity(ApiStruct):
    """Node affinity of the pod; preferences pass through unchanged."""

    schema_markers: ClassVar[SchemaMarkers] = _PASS_THROUGH

    required_during_scheduling_ignored_during_execution: Annotated[
        NodeSelector | None,
        doc("Nodes the pod may run on; flavors are chosen to match it."),
    ] = None


class Affinity(ApiStruct):
    """Scheduling constraints of the pod; pod (anti-)affinity passes through unchanged."""

    schema_markers: ClassVar[SchemaMarkers] = _PASS_THROUGH

    node_affinity: Annotated[NodeAffinity | None, doc("Constraints on the nodes.")] = None


class PodSpec(ApiStruct):
    """The pod's spec; fields other than these pass through unchanged."""

    schema_markers: ClassVar[SchemaMarkers] = _PASS_THROUGH

    containers: Annotated[
        list[Container],
        doc(
            "Containers of the pod; their requests are what quota counts.",
            required=True,
            list_type="map",
            list_map_keys=("name",),
        ),
    ]
    init_containers: Annotated[
        list[Container],
        doc(
            "Containers run before the others (sidecars beside them).",
            list_type="map",
            list_map_keys=("name",),
        ),
    ] = []
    resources: Annotated[
        ResourceRequirements | None, doc("Pod-level resources, replacing the containers' sum.")
    ] = None
    overhead: Annotated[ResourceList, doc("Resources the pod's sandbox adds.")] = {}
    node_selector: Annotated[
        dict[str, str], doc("Labels a node must have.", map_type="atomic")
    ] = {}
    affinity: Annotated[Affinity | None, doc("Scheduling constraints.")] = None
    tolerations: Annotated[
        list[Toleration], doc("Taints the pod tolerates.", list_type="atomic")
    ] = []


class PodTemplateMeta(ApiStruct):
    """Metadata of the template (upstream keeps only these fields)."""

    annotations: Annotated[dict[str, str], doc("Annotations of the pods.")] = {}
    finalizers: Annotated[list[str], doc("Finalizers of the pods.")] = []
    labels: Annotated[dict[str, str], doc("Labels of the pods.")] = {}
    name: Annotated[str | None, doc("Name (unused in a template).")] = None
    namespace: Annotated[str | None, doc("Namespace (unused in a template).")] = None


class PodTemplateShape(ApiStruct):
    """A pod template: metadata and spec."""

    metadata: Annotated[PodTemplateMeta | None, doc("Labels and annotations of the pods.")] = None
    spec: Annotated[PodSpec | None, doc("Spec of the pods.")] = None


# The template as the API types hold it: raw JSON, validated against PodTemplateShape.
PodTemplateSpec = Annotated[dict[str, Any], constrain(shape=PodTemplateShape)]

"""Every kind fleetq serves, with the names and REST facts clients and the CRDs need.

One table drives CRD generation, decoding by kind name, informer URLs and kubectl
short names, so adding a kind is one entry here.
"""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass

from core.api.admission_check import AdmissionCheck
from core.api.api_struct import ApiStruct
from core.api.cluster_queue import ClusterQueue
from core.api.cohort import Cohort
from core.api.groups import FLEETQ_GROUP, FLEETQ_VERSION, KUEUE_GROUP, KUEUE_VERSION
from core.api.local_queue import LocalQueue
from core.api.multikueue import MultiKueueCluster, MultiKueueConfig
from core.api.multikueue_cluster_set import MultiKueueClusterSet
from core.api.resource_flavor import ResourceFlavor
from core.api.topology import Topology
from core.api.worker_capacity import WorkerCapacity
from core.api.workload import Workload
from core.api.workload_priority_class import WorkloadPriorityClass


class Scope(enum.StrEnum):
    """Whether objects of a kind live in a namespace."""

    NAMESPACED = "Namespaced"
    CLUSTER = "Cluster"


@dataclass(frozen=True, slots=True)
class PrinterColumn:
    """A column `kubectl get` shows for a kind."""

    name: str
    json_path: str
    type: str
    description: str
    priority: int = 0


@dataclass(frozen=True, slots=True)
class KindInfo:
    """Names and REST facts of one kind."""

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    scope: Scope
    type: type[ApiStruct]
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    status_subresource: bool = True
    printer_columns: tuple[PrinterColumn, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{self.group}"

    @property
    def namespaced(self) -> bool:
        return self.scope is Scope.NAMESPACED

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        """REST path of the collection, or of one object when `name` is given."""
        base = f"/apis/{self.group}/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        return f"{base}/{name}" if name else base


_KUEUE = ("kueue",)
_AGE = PrinterColumn("Age", ".metadata.creationTimestamp", "date", "Time since creation")


def _kind(
    kind: str,
    plural: str,
    scope: Scope,
    type_: type[ApiStruct],
    *,
    group: str = KUEUE_GROUP,
    version: str = KUEUE_VERSION,
    categories: tuple[str, ...] = _KUEUE,
    short_names: tuple[str, ...] = (),
    status_subresource: bool = True,
    printer_columns: tuple[PrinterColumn, ...] = (),
) -> KindInfo:
    """A kind of upstream's group unless `group`, `version` and `categories` say otherwise."""
    return KindInfo(
        group=group,
        version=version,
        kind=kind,
        plural=plural,
        singular=kind.lower(),
        scope=scope,
        type=type_,
        short_names=short_names,
        categories=categories,
        status_subresource=status_subresource,
        printer_columns=printer_columns,
    )


_fleetq = functools.partial(
    _kind, group=FLEETQ_GROUP, version=FLEETQ_VERSION, categories=("fleetq",)
)
"""A kind of fleetq's own group."""

KINDS: tuple[KindInfo, ...] = (
    _kind(
        "ResourceFlavor",
        "resourceflavors",
        Scope.CLUSTER,
        ResourceFlavor,
        short_names=("flavor", "flavors", "rf"),
        status_subresource=False,
    ),
    _kind(
        "ClusterQueue",
        "clusterqueues",
        Scope.CLUSTER,
        ClusterQueue,
        short_names=("cq",),
        printer_columns=(
            PrinterColumn("Cohort", ".spec.cohortName", "string", "Cohort the queue belongs to"),
            PrinterColumn(
                "Strategy",
                ".spec.queueingStrategy",
                "string",
                "Ordering of pending workloads",
                priority=1,
            ),
            PrinterColumn(
                "Pending Workloads",
                ".status.pendingWorkloads",
                "integer",
                "Workloads waiting for admission",
            ),
            PrinterColumn(
                "Admitted Workloads",
                ".status.admittedWorkloads",
                "integer",
                "Admitted workloads not finished yet",
                priority=1,
            ),
        ),
    ),
    _kind(
        "LocalQueue",
        "localqueues",
        Scope.NAMESPACED,
        LocalQueue,
        short_names=("queue", "queues", "lq"),
        printer_columns=(
            PrinterColumn("ClusterQueue", ".spec.clusterQueue", "string", "Backing ClusterQueue"),
            PrinterColumn(
                "Pending Workloads",
                ".status.pendingWorkloads",
                "integer",
                "Workloads waiting for admission",
            ),
            PrinterColumn(
                "Admitted Workloads",
                ".status.admittedWorkloads",
                "integer",
                "Admitted workloads not finished yet",
            ),
        ),
    ),
    _kind("Cohort", "cohorts", Scope.CLUSTER, Cohort),
    _kind(
        "Workload",
        "workloads",
        Scope.NAMESPACED,
        Workload,
        short_names=("kwl", "kueueworkload", "kueueworkloads"),
        printer_columns=(
            PrinterColumn("Queue", ".spec.queueName", "string", "LocalQueue it was submitted to"),
            PrinterColumn(
                "Reserved in",
                ".status.admission.clusterQueue",
                "string",
                "ClusterQueue holding its quota reservation",
            ),
            PrinterColumn(
                "Admitted",
                ".status.conditions[?(@.type=='Admitted')].status",
                "string",
                "Whether it is admitted",
            ),
            PrinterColumn(
                "Finished",
                ".status.conditions[?(@.type=='Finished')].status",
                "string",
                "Whether it finished",
            ),
            _AGE,
        ),
    ),
    _kind(
        "WorkloadPriorityClass",
        "workloadpriorityclasses",
        Scope.CLUSTER,
        WorkloadPriorityClass,
        status_subresource=False,
        printer_columns=(PrinterColumn("Value", ".value", "integer", "Priority value"),),
    ),
    _kind("AdmissionCheck", "admissionchecks", Scope.CLUSTER, AdmissionCheck),
    _kind(
        "MultiKueueCluster",
        "multikueueclusters",
        Scope.CLUSTER,
        MultiKueueCluster,
        printer_columns=(
            PrinterColumn(
                "Connected",
                ".status.conditions[?(@.type=='Active')].status",
                "string",
                "Whether the worker is connected",
            ),
            _AGE,
        ),
    ),
    _kind(
        "MultiKueueConfig",
        "multikueueconfigs",
        Scope.CLUSTER,
        MultiKueueConfig,
        status_subresource=False,
    ),
    _kind("Topology", "topologies", Scope.CLUSTER, Topology, status_subresource=False),
    _fleetq(
        "WorkerCapacity",
        "workercapacities",
        Scope.CLUSTER,
        WorkerCapacity,
        short_names=("wcap",),
        printer_columns=(
            PrinterColumn("Cluster", ".spec.clusterName", "string", "Worker the report is about"),
            PrinterColumn("Observed", ".status.observedTime", "date", "Age of the report"),
            _AGE,
        ),
    ),
    _fleetq(
        "MultiKueueClusterSet",
        "multikueueclustersets",
        Scope.CLUSTER,
        MultiKueueClusterSet,
        short_names=("mkset",),
        status_subresource=False,
        printer_columns=(_AGE,),
    ),
)

BY_KIND: dict[str, KindInfo] = {info.kind: info for info in KINDS}
BY_TYPE: dict[type[ApiStruct], KindInfo] = {info.type: info for info in KINDS}
BY_PLURAL: dict[str, KindInfo] = {info.plural: info for info in KINDS}


def kind_info(kind: str | type[ApiStruct]) -> KindInfo:
    """Look a kind up by name ("ClusterQueue"), plural ("clusterqueues") or type."""
    info = (
        (BY_KIND.get(kind) or BY_PLURAL.get(kind)) if isinstance(kind, str) else BY_TYPE.get(kind)
    )
    if info is None:
        known = ", ".join(sorted(BY_KIND))
        raise KeyError(f"unknown kind {kind!r}; fleetq serves: {known}")
    return info

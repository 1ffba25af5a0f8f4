"""Quota objects: ResourceFlavor, ClusterQueue, Cohort, LocalQueue (upstream:
`utiltesting.MakeResourceFlavor`, `MakeClusterQueue`, `MakeFlavorQuotas`, ...)."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, Self

from tests.builders.base import KUEUE_API_VERSION, DictBuilder, ObjectBuilder, without_none
from tests.builders.pod import Quantity

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


class ResourceFlavor(ObjectBuilder):
    """A flavor with no spec at all until a method (or `spec()`) writes one."""

    api_version = KUEUE_API_VERSION
    kind = "ResourceFlavor"

    def node_labels(self, labels: Mapping[str, str]) -> Self:
        """Merge into spec.nodeLabels (injected as the pods' nodeSelector on admission)."""
        self._at("spec", "nodeLabels").update(labels)
        return self

    def node_taint(self, key: str, value: str | None = None, effect: str = "NoSchedule") -> Self:
        taint = without_none(key=key, value=value, effect=effect)
        self._at("spec").setdefault("nodeTaints", []).append(taint)
        return self

    def toleration(self, toleration: Mapping[str, Any]) -> Self:
        self._at("spec").setdefault("tolerations", []).append(dict(toleration))
        return self


class FlavorQuotas(DictBuilder):
    """One flavor's entry in a resource group: `FlavorQuotas("f", {"cpu": "4"})`, then
    `.resource(...)` for quotas with borrowing or lending limits."""

    def __init__(self, flavor: str, nominal: Mapping[str, Quantity] | None = None) -> None:
        self._obj = {"name": flavor, "resources": []}
        for resource, quantity in (nominal or {}).items():
            self.resource(resource, quantity)

    def resource(
        self,
        name: str,
        nominal: Quantity,
        *,
        borrowing_limit: Quantity | None = None,
        lending_limit: Quantity | None = None,
    ) -> Self:
        quota = without_none(
            name=name,
            nominalQuota=nominal,
            borrowingLimit=borrowing_limit,
            lendingLimit=lending_limit,
        )
        self._obj["resources"].append(quota)
        return self


class ResourceGroupMethods(ObjectBuilder):
    """`resource_group` and fair sharing, shared by ClusterQueue and Cohort."""

    def resource_group(
        self, *flavors: FlavorQuotas | Mapping[str, Any], covered: Sequence[str] | None = None
    ) -> Self:
        """Append a resource group; it covers the flavors' resources (in first-seen
        order) unless `covered` says otherwise."""
        entries = [
            f.obj() if isinstance(f, FlavorQuotas) else copy.deepcopy(dict(f)) for f in flavors
        ]
        if covered is None:
            names = (quota["name"] for entry in entries for quota in entry["resources"])
            covered = list(dict.fromkeys(names))
        group = {"coveredResources": list(covered), "flavors": entries}
        self._at("spec").setdefault("resourceGroups", []).append(group)
        return self

    def fair_sharing_weight(self, weight: Quantity) -> Self:
        return self.spec(fairSharing={"weight": weight})


class ClusterQueue(ResourceGroupMethods):
    """A ClusterQueue with an empty spec: no namespaceSelector (so it admits from no
    namespace) until `namespace_selector` or `only_namespace` sets one."""

    api_version = KUEUE_API_VERSION
    kind = "ClusterQueue"

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._obj["spec"] = {}

    def namespace_selector(self, selector: Mapping[str, Any] | None = None) -> Self:
        """A label selector; none (`{}`) selects every namespace."""
        return self.spec(namespaceSelector=dict(selector or {}))

    def only_namespace(self, namespace: str) -> Self:
        """Admit from this namespace alone: other tests' workloads never land here."""
        return self.namespace_selector({"matchLabels": {NAMESPACE_NAME_LABEL: namespace}})

    def cohort(self, cohort: str) -> Self:
        return self.spec(cohortName=cohort)

    def preemption(
        self,
        *,
        within_cluster_queue: str | None = None,
        reclaim_within_cohort: str | None = None,
        borrow_within_cohort: Mapping[str, Any] | None = None,
    ) -> Self:
        policy = without_none(
            withinClusterQueue=within_cluster_queue,
            reclaimWithinCohort=reclaim_within_cohort,
            borrowWithinCohort=borrow_within_cohort,
        )
        return self.spec(preemption=policy)

    def admission_checks(self, *checks: str) -> Self:
        """spec.admissionChecksStrategy naming `checks` for every flavor."""
        strategy = {"admissionChecks": [{"name": check} for check in checks]}
        return self.spec(admissionChecksStrategy=strategy)

    def queueing_strategy(self, strategy: str) -> Self:
        """ "BestEffortFIFO" (Kueue's default) or "StrictFIFO"."""
        return self.spec(queueingStrategy=strategy)

    def stop_policy(self, policy: str) -> Self:
        """ "None", "Hold" or "HoldAndDrain"."""
        return self.spec(stopPolicy=policy)


class Cohort(ResourceGroupMethods):
    """A Cohort (v1beta2: an object of its own, with quotas and a parent)."""

    api_version = KUEUE_API_VERSION
    kind = "Cohort"

    def parent(self, cohort: str) -> Self:
        return self.spec(parentName=cohort)


class LocalQueue(ObjectBuilder):
    """A LocalQueue; `cluster_queue` is the one field Kueue requires."""

    api_version = KUEUE_API_VERSION
    kind = "LocalQueue"

    def cluster_queue(self, cluster_queue: str) -> Self:
        return self.spec(clusterQueue=cluster_queue)

    def stop_policy(self, policy: str) -> Self:
        return self.spec(stopPolicy=policy)

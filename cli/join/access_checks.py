"""Before changing anything: may the CLI's own credentials do what join will do?

Asked with SelfSubjectAccessReviews, one per (verb, resource, namespace), so a missing right
is reported up front as "cannot patch secrets in namespace kueue-system" for every cluster
at once, instead of as a 403 halfway through a run that already changed half the fleet.
"""

from __future__ import annotations

from dataclasses import dataclass

from cli.join.cluster_rest import ClusterRest
from cli.join.fleet_file import FleetFile
from cli.join.resource_paths import KINDS, KindInfo

APPLY_VERBS = ("get", "patch")
"""Server-side apply is a PATCH; join reads each object first to judge the outcome."""

_REVIEWS_PATH = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"


@dataclass(frozen=True, slots=True)
class AccessNeed:
    verb: str
    kind: KindInfo
    namespace: str | None = None
    subresource: str = ""

    def describe(self) -> str:
        resource = self.kind.resource
        if self.subresource:
            resource = f"{self.kind.plural}/{self.subresource}"
            resource += f".{self.kind.group}" if self.kind.group else ""
        where = f" in namespace {self.namespace}" if self.namespace else ""
        return f"{self.verb} {resource}{where}"

    def review(self) -> dict[str, object]:
        attributes: dict[str, str] = {
            "verb": self.verb,
            "group": self.kind.group,
            "resource": self.kind.plural,
        }
        if self.subresource:
            attributes["subresource"] = self.subresource
        if self.namespace:
            attributes["namespace"] = self.namespace
        return {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attributes},
        }


def _apply(kind: str, namespace: str | None = None) -> list[AccessNeed]:
    return [AccessNeed(verb, KINDS[kind], namespace) for verb in APPLY_VERBS]


def worker_needs(fleet: FleetFile) -> list[AccessNeed]:
    identity = fleet.identity.namespace
    needs = [
        *_apply("Namespace"),
        *_apply("ServiceAccount", identity),
        AccessNeed("create", KINDS["ServiceAccount"], identity, "token"),
        *_apply("ClusterRole"),
        *_apply("ClusterRoleBinding"),
    ]
    for namespace in fleet.mirror:
        if namespace.queues:
            needs.extend(_apply("LocalQueue", namespace.name))
    return needs


def manager_needs(fleet: FleetFile) -> list[AccessNeed]:
    needs = [
        *_apply("Namespace"),
        *_apply("Secret", fleet.manager.namespace),
        *_apply("MultiKueueCluster"),
        *_apply("MultiKueueConfig"),
        *_apply("AdmissionCheck"),
    ]
    if any(config.uses_cluster_set for config in fleet.dispatch.configs):
        needs.extend(_apply("MultiKueueClusterSet"))
    return needs


def missing_access(rest: ClusterRest, needs: list[AccessNeed]) -> list[AccessNeed]:
    """The needs the cluster's authorizer does not allow for the CLI's user."""
    missing: list[AccessNeed] = []
    for need in needs:
        answer = rest.create(_REVIEWS_PATH, need.review())
        if not (answer.get("status") or {}).get("allowed"):
            missing.append(need)
    return missing

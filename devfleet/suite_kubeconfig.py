"""One kubeconfig holding every cluster of a fleet under the contexts a kind fleet has.

Upstream's MultiKueue suites find their clusters by context (`kind-kind-manager`, ...;
devfleet.kind_names), all in one kubeconfig, as `kind export kubeconfig` leaves it. A
local fleet keeps one kubeconfig per cluster (kwokctl's, certificates inline); this builds
the merged one from them, pointing each worker at its control-plane name so the suite
reaches it the same way the MultiKueue kubeconfigs it writes do. Pure: parsed kubeconfigs
in, a kubeconfig mapping out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from devfleet.kind_names import KindCluster


class SuiteKubeconfigError(ValueError):
    """A fleet kubeconfig lacks what the merged one needs; the message names the cluster."""


def _current(kubeconfig: Mapping[str, Any], role: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The cluster and user entries of a kubeconfig's current context."""
    contexts = {c["name"]: c["context"] for c in kubeconfig.get("contexts") or ()}
    name = kubeconfig.get("current-context") or next(iter(contexts), None)
    context = contexts.get(name) if name else None
    if context is None:
        raise SuiteKubeconfigError(f"{role}: its kubeconfig has no current context")
    clusters = {c["name"]: c["cluster"] for c in kubeconfig.get("clusters") or ()}
    users = {u["name"]: u["user"] for u in kubeconfig.get("users") or ()}
    try:
        return dict(clusters[context["cluster"]]), dict(users[context["user"]])
    except KeyError as missing:
        raise SuiteKubeconfigError(f"{role}: its kubeconfig names no entry {missing}") from None


def suite_kubeconfig(
    named: Sequence[KindCluster], kubeconfigs: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """Contexts `kind-<kind name>`, one per cluster, the manager's current; a cluster
    offered at a control-plane name (`loopback` set) is reached there."""
    clusters, users, contexts = [], [], []
    for cluster in named:
        entry, user = _current(kubeconfigs[cluster.role], cluster.role)
        if "certificate-authority-data" not in entry:
            raise SuiteKubeconfigError(
                f"{cluster.role}: its kubeconfig has no inline certificate-authority-data "
                "(the suite copies it into the MultiKueue kubeconfigs it writes)"
            )
        if cluster.loopback is not None:
            entry["server"] = cluster.control_plane_server
        clusters.append({"name": cluster.context, "cluster": entry})
        users.append({"name": cluster.context, "user": user})
        contexts.append(
            {
                "name": cluster.context,
                "context": {"cluster": cluster.context, "user": cluster.context},
            }
        )
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": clusters,
        "users": users,
        "contexts": contexts,
        "current-context": named[0].context,
        "preferences": {},
    }

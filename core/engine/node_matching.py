"""Label, node-affinity and taint matching, as Kubernetes defines them.

Used to decide whether a namespace is selected by a ClusterQueue and whether a pod set
may land on the nodes a ResourceFlavor stands for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from core.engine.model import (
    LabelSelector,
    NodeSelectorTerm,
    SelectorRequirement,
    Taint,
    TaintEffect,
    Toleration,
)


def _requirement_matches(req: SelectorRequirement, labels: Mapping[str, str]) -> bool:
    op = req.operator
    present = req.key in labels
    if op == "In":
        return present and labels[req.key] in req.values
    if op == "NotIn":
        return not present or labels[req.key] not in req.values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt"):
        if not present or len(req.values) != 1:
            return False
        try:
            have, want = int(labels[req.key]), int(req.values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False


def label_selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector semantics; None selects nothing, an empty selector everything."""
    if selector is None:
        return False
    for key, value in selector.match_labels.items():
        if labels.get(key) != value:
            return False
    return all(_requirement_matches(req, labels) for req in selector.match_expressions)


def flavor_affinity_matches(
    node_selector: Mapping[str, str],
    terms: Sequence[NodeSelectorTerm],
    allowed_keys: Iterable[str] | frozenset[str],
    node_labels: Mapping[str, str],
) -> bool:
    """Whether a pod set's nodeSelector and required affinity accept a flavor's labels.

    Only keys some flavor of the resource group sets count (`allowed_keys`); the rest are
    left for kube-scheduler. A term that loses all its expressions makes the whole
    affinity unconstrained, as upstream does.
    """
    keys = allowed_keys if isinstance(allowed_keys, frozenset) else frozenset(allowed_keys)
    for key, value in node_selector.items():
        if key in keys and node_labels.get(key) != value:
            return False
    if not terms:
        return True
    filtered: list[list[SelectorRequirement]] = []
    for term in terms:
        exprs = [e for e in term.match_expressions if e.key in keys]
        if not exprs:
            return True
        filtered.append(exprs)
    return any(all(_requirement_matches(e, node_labels) for e in exprs) for exprs in filtered)


def node_affinity_matches(terms: Sequence[NodeSelectorTerm], labels: Mapping[str, str]) -> bool:
    """Required node affinity against one node's labels: terms ORed, expressions ANDed.

    An empty term matches no node, as Kubernetes defines it."""
    return any(
        term.match_expressions
        and all(_requirement_matches(e, labels) for e in term.match_expressions)
        for term in terms
    )


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator == "Exists":
        return True
    if toleration.operator in ("", "Equal"):
        return toleration.value == taint.value
    return False


def first_untolerated_taint(
    taints: Iterable[Taint], tolerations: Sequence[Toleration]
) -> Taint | None:
    """The first NoSchedule/NoExecute taint no toleration covers, if any."""
    for taint in taints:
        if taint.effect not in (TaintEffect.NO_SCHEDULE, TaintEffect.NO_EXECUTE):
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def format_taint(taint: Taint) -> str:
    """Kubernetes' Taint.ToString(): `key=value:effect` (or `key:effect`)."""
    if taint.value:
        return f"{taint.key}={taint.value}:{taint.effect}"
    return f"{taint.key}:{taint.effect}"

"""Requests each apiserver served, by verb and resource, from its own
`apiserver_request_total` counter: reads included, which the write-only audit log lacks.

Read before and after a phase, the difference divided by the dispatched workloads says
what one dispatch costs each control plane (bench/README.md).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from prometheus_client.parser import text_string_to_metric_families

from devfleet.cluster_access import ClusterAccess
from devfleet.upstream_kueue import kubectl

RequestCounts = Counter[str]


def request_counts(member: ClusterAccess) -> RequestCounts:
    """`verb resource[/subresource]` → requests served so far (watches counted once each)."""
    text = kubectl(member.kubeconfig, "get", "--raw", "/metrics", timeout=30.0)
    counts: RequestCounts = Counter()
    for family in text_string_to_metric_families(text):
        if family.name != "apiserver_request":
            continue
        for sample in family.samples:
            if not sample.name.endswith("_total"):
                continue
            labels = sample.labels
            resource = labels.get("resource", "")
            if labels.get("subresource"):
                resource += "/" + labels["subresource"]
            counts[f"{labels.get('verb', '?')} {resource}"] += int(sample.value)
    return counts


def per_workload(
    before: Mapping[str, RequestCounts], after: Mapping[str, RequestCounts], workloads: int
) -> dict[str, dict[str, float]]:
    """Per cluster, the requests of a phase per dispatched workload (≥ 0.05 shown), most first."""
    out: dict[str, dict[str, float]] = {}
    for role, counts in after.items():
        delta = counts - before.get(role, Counter())
        out[role] = {
            key: round(n / max(1, workloads), 2)
            for key, n in delta.most_common()
            if n / max(1, workloads) >= 0.05
        }
    return out

"""The topology gate every queued Pod is created with, as upstream's Pod webhook adds it.

With topology-aware scheduling on (always, in v0.19), a gated Pod also gets
`kueue.x-k8s.io/topology`: on admission the admission gate comes off, and the topology
gate stays only when the admission placed the Pod in a topology domain, for the topology
ungater to lift together with the domain's node selector (`integrations.pod.admission`).
A Pod naming its pod-index label (`kueue.x-k8s.io/pod-group-pod-index-label`) gets that
label's value copied to `kueue.x-k8s.io/pod-group-pod-index`, its rank in the group.
"""

from __future__ import annotations

from typing import Any

from integrations.framework.labels import (
    POD_GROUP_POD_INDEX_LABEL_ANNOTATION,
    TOPOLOGY_SCHEDULING_GATE,
)
from integrations.pod.pod_sets import POD_GROUP_POD_INDEX_LABEL


def add_topology_gate(pod: dict[str, Any]) -> None:
    """Gate the Pod (in place) for topology-aware scheduling; see module docstring."""
    meta = pod.setdefault("metadata", {})
    index_label = (meta.get("annotations") or {}).get(POD_GROUP_POD_INDEX_LABEL_ANNOTATION)
    if index_label is not None:
        labels = dict(meta.get("labels") or {})
        labels[POD_GROUP_POD_INDEX_LABEL] = labels.get(str(index_label), "")
        meta["labels"] = labels
    spec = pod.setdefault("spec", {})
    gates = list(spec.get("schedulingGates") or ())
    if not any(g.get("name") == TOPOLOGY_SCHEDULING_GATE for g in gates):
        gates.append({"name": TOPOLOGY_SCHEDULING_GATE})
    spec["schedulingGates"] = gates

"""API groups and versions fleetq serves: upstream Kueue's, and its own additions."""

from __future__ import annotations

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_VERSION = "v1beta2"
KUEUE_API_VERSION = f"{KUEUE_GROUP}/{KUEUE_VERSION}"

FLEETQ_GROUP = "fleetq.dev"
FLEETQ_VERSION = "v1alpha1"
FLEETQ_API_VERSION = f"{FLEETQ_GROUP}/{FLEETQ_VERSION}"

"""The field-manager names fleetq writes under, so `managedFields` shows who owns what.

One definition for every writer of fleetq. Server-side apply ties field ownership to the
name, so a name here never changes lightly: a renamed writer would leave the fields its old
name owns behind, owned by no one who still writes them.
"""

from __future__ import annotations

from typing import Final

FIELD_MANAGER: Final = "fleetq-hub"
"""The Kueue manager runtime (core.manager), in the hub and in the worker agent alike:
Workloads and their status, finalizers, queue status, webhook configurations."""

MULTIKUEUE_FIELD_MANAGER: Final = "fleetq-multikueue"
"""The hub's MultiKueue controllers: cluster and admission-check status, copies on workers."""

AGENT_FIELD_MANAGER: Final = "fleetq-agent"
"""The worker agent's WorkerCapacity report."""

JOIN_FIELD_MANAGER: Final = "fleetq-join"
"""`fleetq join`: the objects that connect a worker to the manager."""

CLI_FIELD_MANAGER: Final = "fleetq-cli"
"""`fleetq stop|resume`: queue stop policies and workload activation."""

"""Condition types and reasons of a Workload, spelled exactly as upstream Kueue spells them.

The one definition: the engine, the manager runtime, MultiKueue, the job kinds and the CLI
all import these. Dashboards and alerts match on the strings; an Enum keeps a typo from
becoming a new reason, and every member is a `str`, so it serialises unchanged into
`status.conditions[]`.
"""

from __future__ import annotations

import enum


class WorkloadConditionType(enum.StrEnum):
    """Condition types set on a Workload."""

    QUOTA_RESERVED = "QuotaReserved"
    """Quota is reserved in a ClusterQueue."""
    ADMITTED = "Admitted"
    """Quota is reserved and every admission check is Ready."""
    PODS_READY = "PodsReady"
    """All pods are ready or have succeeded."""
    FINISHED = "Finished"
    """The job finished (succeeded or failed)."""
    EVICTED = "Evicted"
    """The workload was evicted; the reason says why."""
    PREEMPTED = "Preempted"
    """The workload was preempted; accompanies Evicted with a detailed reason."""
    REQUEUED = "Requeued"
    """The workload is back in its queue after an eviction."""
    DEACTIVATION_TARGET = "DeactivationTarget"
    """The workload is about to be deactivated (temporary)."""
    BLOCKED_ON_PREEMPTION_GATES = "BlockedOnPreemptionGates"
    """Preemption would free quota but a preemption gate is closed."""
    WAITING_FOR_REPLACEMENT_PODS = "WaitingForReplacementPods"
    """Pods its pod group declares are missing (failed, deleted): while True it is not
    queued again."""


class WorkloadReason(enum.StrEnum):
    """Reasons used on Workload conditions."""

    # QuotaReserved / Admitted
    QUOTA_RESERVED = "QuotaReserved"
    PENDING = "Pending"
    ADMITTED = "Admitted"
    NO_RESERVATION = "NoReservation"
    UNSATISFIED_CHECKS = "UnsatisfiedChecks"
    NO_RESERVATION_UNSATISFIED_CHECKS = "NoReservationUnsatisfiedChecks"
    PENDING_DELAYED_TOPOLOGY_REQUESTS = "PendingDelayedTopologyRequests"
    INADMISSIBLE = "Inadmissible"
    ADMISSION_GATED = "AdmissionGated"
    ON_HOLD = "OnHold"
    # Evicted
    PREEMPTED = "Preempted"
    PODS_READY_TIMEOUT = "PodsReadyTimeout"
    ADMISSION_CHECK = "AdmissionCheck"
    CLUSTER_QUEUE_STOPPED = "ClusterQueueStopped"
    LOCAL_QUEUE_STOPPED = "LocalQueueStopped"
    NODE_FAILURES = "NodeFailures"
    EVICTED_ON_MANAGER_CLUSTER = "EvictedOnManagerCluster"
    WORKLOAD_SLICE_REPLACED = "WorkloadSliceReplaced"
    DEACTIVATED = "Deactivated"
    FLAVOR_MIGRATION = "FlavorMigration"
    """A concurrent-admission variant gave way to a sibling on a more preferred flavor."""
    VARIANT_EVICTED = "VariantEvicted"
    """A concurrent-admission parent whose admitted variant was evicted."""
    # Preempted
    IN_CLUSTER_QUEUE = "InClusterQueue"
    IN_COHORT_RECLAMATION = "InCohortReclamation"
    IN_COHORT_FAIR_SHARING = "InCohortFairSharing"
    IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"
    # Requeued
    REACTIVATED = "Reactivated"
    BACKOFF_FINISHED = "BackoffFinished"
    CLUSTER_QUEUE_RESTARTED = "ClusterQueueRestarted"
    LOCAL_QUEUE_RESTARTED = "LocalQueueRestarted"
    # DeactivationTarget
    REQUEUING_LIMIT_EXCEEDED = "RequeuingLimitExceeded"
    MAXIMUM_EXECUTION_TIME_EXCEEDED = "MaximumExecutionTimeExceeded"
    # PodsReady
    WAIT_FOR_START = "WaitForStart"
    WAIT_FOR_RECOVERY = "WaitForRecovery"
    STARTED = "Started"
    RECOVERED = "Recovered"
    # Finished
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    FAILED_TO_START = "FailedToStart"
    """The admission could not be applied to the job (e.g. a nodeSelector conflict)."""
    OUT_OF_SYNC = "OutOfSync"
    OWNER_NOT_FOUND = "OwnerNotFound"
    """The job went away (deleted, its Workload orphaned): the quota is released."""
    # BlockedOnPreemptionGates
    PREEMPTION_GATED = "PreemptionGated"
    # WaitingForReplacementPods (False: PodsReady, or the Evicted reason while evicted)
    PODS_FAILED = "PodsFailed"
    PODS_READY = "PodsReady"

"""Condition types and reasons, spelled exactly as upstream Kueue writes them.

Enums so that a typo can never become a new reason on the wire; every value is a `str`
so it serialises unchanged into `status.conditions[].reason`.
"""

from __future__ import annotations

from enum import StrEnum


class WorkloadConditionType(StrEnum):
    """Workload `status.conditions[].type` values the engine manages."""

    QUOTA_RESERVED = "QuotaReserved"
    ADMITTED = "Admitted"
    EVICTED = "Evicted"
    PREEMPTED = "Preempted"
    REQUEUED = "Requeued"
    PODS_READY = "PodsReady"
    FINISHED = "Finished"
    DEACTIVATION_TARGET = "DeactivationTarget"


class QuotaReservedReason(StrEnum):
    """Reasons on QuotaReserved (True: `QuotaReserved`; False: why not yet)."""

    QUOTA_RESERVED = "QuotaReserved"
    PENDING = "Pending"
    WAITING_FOR_QUOTA = "WaitingForQuota"
    NO_MATCHING_FLAVOR = "NoMatchingFlavor"
    EXCEEDS_MAX_QUOTA = "ExceedsMaxQuota"
    WAITING_FOR_PREEMPTED_WORKLOADS = "WaitingForPreemptedWorkloads"
    MISCONFIGURED = "Misconfigured"
    SUSPENDED = "Suspended"
    PENDING_EVALUATION = "PendingEvaluation"
    WAITING_FOR_PODS_READY = "WaitingForPodsReady"
    ON_HOLD = "OnHold"
    INADMISSIBLE = "Inadmissible"


class AdmittedReason(StrEnum):
    ADMITTED = "Admitted"
    NO_RESERVATION = "NoReservation"
    UNSATISFIED_ADMISSION_CHECKS = "UnsatisfiedAdmissionChecks"


class EvictedReason(StrEnum):
    """Why a workload lost (or is losing) its quota reservation."""

    PREEMPTED = "Preempted"
    PODS_READY_TIMEOUT = "PodsReadyTimeout"
    ADMISSION_CHECK = "AdmissionCheck"
    CLUSTER_QUEUE_STOPPED = "ClusterQueueStopped"
    LOCAL_QUEUE_STOPPED = "LocalQueueStopped"
    NODE_FAILURES = "NodeFailures"
    DEACTIVATED = "Deactivated"
    EVICTED_ON_MANAGER_CLUSTER = "EvictedOnManagerCluster"


class PreemptedReason(StrEnum):
    """Detailed reason on the Preempted condition of a victim."""

    IN_CLUSTER_QUEUE = "InClusterQueue"
    IN_COHORT_RECLAMATION = "InCohortReclamation"
    IN_COHORT_FAIR_SHARING = "InCohortFairSharing"
    IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"


class RequeuedReason(StrEnum):
    BACKOFF_FINISHED = "BackoffFinished"
    REACTIVATED = "Reactivated"
    CLUSTER_QUEUE_RESTARTED = "ClusterQueueRestarted"
    LOCAL_QUEUE_RESTARTED = "LocalQueueRestarted"


class PodsReadyReason(StrEnum):
    STARTED = "Started"
    RECOVERED = "Recovered"
    WAIT_FOR_START = "WaitForStart"
    WAIT_FOR_RECOVERY = "WaitForRecovery"


class FinishedReason(StrEnum):
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    FAILED_TO_START = "FailedToStart"
    """The admission could not be applied to the job (e.g. a nodeSelector conflict)."""
    OUT_OF_SYNC = "OutOfSync"
    OWNER_NOT_FOUND = "OwnerNotFound"


class DeactivationTargetReason(StrEnum):
    REQUEUING_LIMIT_EXCEEDED = "RequeuingLimitExceeded"
    MAXIMUM_EXECUTION_TIME_EXCEEDED = "MaximumExecutionTimeExceeded"
    ADMISSION_CHECK = "AdmissionCheck"


class QueueActiveReason(StrEnum):
    """Reasons on the `Active` condition of ClusterQueues and LocalQueues."""

    READY = "Ready"
    STOPPED = "Stopped"
    TERMINATING = "Terminating"
    FLAVOR_NOT_FOUND = "FlavorNotFound"
    ADMISSION_CHECK_NOT_FOUND = "AdmissionCheckNotFound"
    ADMISSION_CHECK_INACTIVE = "AdmissionCheckInactive"
    COHORT_HAS_CYCLE = "CohortHasCycle"
    CLUSTER_QUEUE_IS_INACTIVE = "ClusterQueueIsInactive"
    CLUSTER_QUEUE_DOES_NOT_EXIST = "ClusterQueueDoesNotExist"


class CheckState(StrEnum):
    """State of one admission check on a workload."""

    PENDING = "Pending"
    READY = "Ready"
    RETRY = "Retry"
    REJECTED = "Rejected"


ACTIVE_CONDITION = "Active"

"""Kubernetes Event reasons the hub records, and how it names the objects they are about.

Reasons are an Enum so a typo cannot become a new reason users' alerts miss. Events are
best effort and never block a controller: `core.kube.events.EventRecorder` aggregates and
writes them in the background (only while this replica leads).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

from core.kube.events import ObjectReference, reference_to
from core.kube.resources import ResourceRef

CONTROLLER_NAME = "kueue.x-k8s.io/fleetq-hub"


class EventReason(enum.StrEnum):
    # Workload lifecycle (same reasons upstream records).
    QUOTA_RESERVED = "QuotaReserved"
    ADMITTED = "Admitted"
    PREEMPTED = "Preempted"
    FINISHED_WORKLOAD = "FinishedWorkload"
    # Job lifecycle.
    CREATED_WORKLOAD = "CreatedWorkload"
    STARTED = "Started"
    STOPPED = "Stopped"
    DELETED_WORKLOAD = "DeletedWorkload"
    UPDATED_WORKLOAD = "UpdatedWorkload"
    FAILED_TO_START = "FailedToStart"
    ERROR_CREATING_WORKLOAD = "ErrorCreatingWorkload"
    # Concurrent admission (upstream's concurrent-admission controller).
    CREATED_VARIANT = "CreatedVariant"
    # Pod groups (upstream's Pod integration).
    ERR_WORKLOAD_COMPOSE = "ErrWorkloadCompose"
    EXCESS_POD_DELETED = "ExcessPodDeleted"
    # Objects the engine cannot use.
    INVALID_OBJECT = "InvalidObject"
    COHORT_HAS_CYCLE = "CohortHasCycle"
    """A Cohort's parentName chain loops (fleetq's; upstream only logs it)."""


def evicted_reason(reason: str, underlying_cause: str = "") -> str:
    """Upstream's eviction event reason: `EvictedDueTo<reason>[DueTo<cause>]`."""
    shown = f"EvictedDueTo{reason}"
    return f"{shown}DueTo{underlying_cause}" if underlying_cause else shown


def reference(obj: Mapping[str, Any], resource: ResourceRef, kind: str) -> ObjectReference:
    """An Event's `regarding` for a cached object of `resource`."""
    api_version = f"{resource.group}/{resource.version}" if resource.group else resource.version
    return reference_to(obj, kind=kind, api_version=api_version)

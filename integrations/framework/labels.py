"""Label, annotation and finalizer names that link jobs to Workloads, spelled as upstream's.

Users' manifests, dashboards and upstream Kueue on the other side of MultiKueue all match
on these exact strings, so every integration reads them from here and never retypes one.
"""

from __future__ import annotations

from typing import Final

from core.api.multikueue import MULTIKUEUE_CONTROLLER_NAME, MULTIKUEUE_ORIGIN_LABEL

__all__ = [
    "BATCH_CONTROLLER_UID_LABEL",
    "BATCH_JOB_COMPLETION_INDEX_ANNOTATION",
    "BATCH_JOB_CONTROLLER_NAME",
    "BATCH_JOB_MANAGED_POD_LABELS",
    "BATCH_JOB_NAME_LABEL",
    "CLUSTER_QUEUE_LABEL",
    "DEFAULT_LOCAL_QUEUE_NAME",
    "JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION",
    "JOB_MIN_PARALLELISM_ANNOTATION",
    "JOB_STOPPING_ANNOTATION",
    "JOB_UID_LABEL",
    "LEGACY_CONTROLLER_UID_LABEL",
    "LEGACY_JOB_NAME_LABEL",
    "LOCAL_QUEUE_LABEL",
    "MANAGED_LABEL",
    "MANAGED_LABEL_VALUE",
    "MAX_EXEC_TIME_SECONDS_LABEL",
    "MULTIKUEUE_CONTROLLER_NAME",
    "MULTIKUEUE_MANAGED_BY",
    "MULTIKUEUE_ORIGIN_LABEL",
    "POD_ADMISSION_GATE",
    "POD_GROUP_FAST_ADMISSION_ANNOTATION",
    "POD_GROUP_NAME_LABEL",
    "POD_GROUP_POD_INDEX_LABEL_ANNOTATION",
    "POD_GROUP_SERVING_ANNOTATION",
    "POD_GROUP_TOTAL_COUNT_ANNOTATION",
    "POD_ROLE_HASH_ANNOTATION",
    "POD_SET_GROUP_NAME_ANNOTATION",
    "POD_SET_LABEL",
    "POD_SET_PREFERRED_TOPOLOGY_ANNOTATION",
    "POD_SET_REQUIRED_TOPOLOGY_ANNOTATION",
    "POD_SET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION",
    "POD_SET_SLICE_SIZE_ANNOTATION",
    "POD_SET_UNCONSTRAINED_TOPOLOGY_ANNOTATION",
    "POD_SUSPENDING_PARENT_ANNOTATION",
    "PREBUILT_WORKLOAD_ANNOTATION",
    "PREBUILT_WORKLOAD_LABEL",
    "PRIORITY_CLASS_LABEL",
    "PROVISIONING_REQUEST_ANNOTATION_PREFIX",
    "QUEUE_NAME_LABEL",
    "RESOURCE_IN_USE_FINALIZER",
    "TOPOLOGY_SCHEDULING_GATE",
    "WORKLOAD_ANNOTATION",
]

# --- On any job (set by users) ------------------------------------------------------------
QUEUE_NAME_LABEL: Final = "kueue.x-k8s.io/queue-name"
"""The LocalQueue a job is submitted to."""
DEFAULT_LOCAL_QUEUE_NAME: Final = "default"
"""The queue a job without a queue-name lands in, when a LocalQueue of this name exists."""
PRIORITY_CLASS_LABEL: Final = "kueue.x-k8s.io/priority-class"
"""Name of the WorkloadPriorityClass the job's Workload takes its priority from."""
MAX_EXEC_TIME_SECONDS_LABEL: Final = "kueue.x-k8s.io/max-exec-time-seconds"
"""Becomes the Workload's maximumExecutionTimeSeconds."""
PREBUILT_WORKLOAD_LABEL: Final = "kueue.x-k8s.io/prebuilt-workload-name"
"""The job runs under an existing Workload of this name instead of creating one (MultiKueue
puts it on the remote copy of a job)."""
PREBUILT_WORKLOAD_ANNOTATION: Final = PREBUILT_WORKLOAD_LABEL
"""The same, as an annotation of the same key: what upstream's MultiKueue manager writes
since v0.18 (gate WorkloadIdentifierAnnotations, on by default). Read before the label."""
PROVISIONING_REQUEST_ANNOTATION_PREFIX: Final = "provreq.kueue.x-k8s.io/"
"""Job annotations with this prefix are copied to the Workload (ProvisioningRequest
parameters); no other job annotation is."""

# --- On batch/v1 Jobs ---------------------------------------------------------------------
JOB_MIN_PARALLELISM_ANNOTATION: Final = "kueue.x-k8s.io/job-min-parallelism"
"""Enables partial admission: the fewest pods the Job accepts to run with."""
JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION: Final = (
    "kueue.x-k8s.io/job-completions-equal-parallelism"
)
"""With partial admission of an Indexed Job, keep completions equal to parallelism."""
JOB_STOPPING_ANNOTATION: Final = "kueue.x-k8s.io/stopping"
"""Marks a Job suspended by Kueue whose pod template is not restored yet; while it is
present the Job does not count as suspended, so an interrupted stop is finished later."""

# --- Written by Kubernetes' Job controller (never copied to a Workload) --------------------
BATCH_JOB_CONTROLLER_NAME: Final = "kubernetes.io/job-controller"
"""The managedBy value meaning "the built-in Job controller" (same as unset)."""
BATCH_JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"
BATCH_CONTROLLER_UID_LABEL: Final = "batch.kubernetes.io/controller-uid"
LEGACY_JOB_NAME_LABEL: Final = "job-name"
LEGACY_CONTROLLER_UID_LABEL: Final = "controller-uid"
BATCH_JOB_MANAGED_POD_LABELS: Final = (
    LEGACY_JOB_NAME_LABEL,
    LEGACY_CONTROLLER_UID_LABEL,
    BATCH_JOB_NAME_LABEL,
    BATCH_CONTROLLER_UID_LABEL,
)
"""Pod-template labels the apiserver adds to every Job; a stop keeps them as they are."""
BATCH_JOB_COMPLETION_INDEX_ANNOTATION: Final = "batch.kubernetes.io/job-completion-index"
"""Pod label/annotation holding an Indexed Job pod's index (topology-aware placement)."""

# --- On plain Pods, and the templates of kinds whose pods are queued as Pods ----------------
POD_ADMISSION_GATE: Final = "kueue.x-k8s.io/admission"
"""The scheduling gate that holds a queued Pod back until its Workload is admitted."""
MANAGED_LABEL: Final = "kueue.x-k8s.io/managed"
"""Marks a Pod Kueue manages (value `true`); also the name of a queued Pod's finalizer."""
MANAGED_LABEL_VALUE: Final = "true"
POD_SUSPENDING_PARENT_ANNOTATION: Final = "kueue.x-k8s.io/pod-suspending-parent"
"""On a parent's pod template (a Deployment's, a StatefulSet's): the framework that queues
its pods; the Pod webhook gates such a Pod and leaves the finalizer to the parent."""
POD_GROUP_NAME_LABEL: Final = "kueue.x-k8s.io/pod-group-name"
POD_GROUP_TOTAL_COUNT_ANNOTATION: Final = "kueue.x-k8s.io/pod-group-total-count"
POD_GROUP_SERVING_ANNOTATION: Final = "kueue.x-k8s.io/pod-group-serving"
"""A pod group that serves (a StatefulSet's): never finished while its pods run."""
POD_GROUP_FAST_ADMISSION_ANNOTATION: Final = "kueue.x-k8s.io/pod-group-fast-admission"
"""`true`: the group's Workload is built from its first Pod, for the total count."""
POD_GROUP_POD_INDEX_LABEL_ANNOTATION: Final = "kueue.x-k8s.io/pod-group-pod-index-label"
"""On a grouped Pod: the label holding its index in the group (a StatefulSet's ordinal)."""
POD_ROLE_HASH_ANNOTATION: Final = "kueue.x-k8s.io/role-hash"
"""Names a grouped Pod's pod set (its role)."""
IS_GROUP_WORKLOAD_ANNOTATION: Final = "kueue.x-k8s.io/is-group-workload"
"""On a pod group's Workload (`true`): it stands for the group of that name."""
JOB_OWNER_GVK_ANNOTATION: Final = "kueue.x-k8s.io/job-owner-gvk"
JOB_OWNER_NAME_ANNOTATION: Final = "kueue.x-k8s.io/job-owner-name"
"""On a Workload one of several of a job (a LeaderWorkerSet's groups): the job, as upstream
records it beside the owner reference."""
COMPONENT_WORKLOAD_INDEX_ANNOTATION: Final = "kueue.x-k8s.io/component-workload-index"
"""On such a Workload: the index of the part of the job it stands for (the group)."""

# --- MultiKueue ---------------------------------------------------------------------------
MULTIKUEUE_MANAGED_BY: Final = MULTIKUEUE_CONTROLLER_NAME
"""`spec.managedBy` of a job that MultiKueue runs on a worker cluster."""

# --- On Workloads -------------------------------------------------------------------------
JOB_UID_LABEL: Final = "kueue.x-k8s.io/job-uid"
"""UID of the job that owns the Workload (set when the UID is a valid label value)."""
RESOURCE_IN_USE_FINALIZER: Final = "kueue.x-k8s.io/resource-in-use"
"""Keeps a Workload (and its quota) until its job no longer runs."""

# --- On the pods of an admitted job ---------------------------------------------------------
POD_SET_LABEL: Final = "kueue.x-k8s.io/podset"
"""Name of the Workload pod set the pod belongs to."""
LOCAL_QUEUE_LABEL: Final = "kueue.x-k8s.io/local-queue-name"
CLUSTER_QUEUE_LABEL: Final = "kueue.x-k8s.io/cluster-queue-name"
WORKLOAD_ANNOTATION: Final = "kueue.x-k8s.io/workload"
"""Name of the Workload the pod was admitted under."""
TOPOLOGY_SCHEDULING_GATE: Final = "kueue.x-k8s.io/topology"
"""Holds pods back until their topology placement is assigned."""

# --- Topology-aware scheduling requests (pod-template annotations) --------------------------
POD_SET_REQUIRED_TOPOLOGY_ANNOTATION: Final = "kueue.x-k8s.io/podset-required-topology"
POD_SET_PREFERRED_TOPOLOGY_ANNOTATION: Final = "kueue.x-k8s.io/podset-preferred-topology"
POD_SET_UNCONSTRAINED_TOPOLOGY_ANNOTATION: Final = "kueue.x-k8s.io/podset-unconstrained-topology"
POD_SET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION: Final = "kueue.x-k8s.io/podset-slice-required-topology"
POD_SET_SLICE_SIZE_ANNOTATION: Final = "kueue.x-k8s.io/podset-slice-size"
POD_SET_GROUP_NAME_ANNOTATION: Final = "kueue.x-k8s.io/podset-group-name"

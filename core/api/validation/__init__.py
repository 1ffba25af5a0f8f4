"""Pure-Python validation of API objects, mirroring what the apiserver and upstream's
webhooks enforce; the hub's admission webhooks and the CLI call these.

`validate(obj)` runs the schema-marker checks and the kind's cross-field rules;
`validate_update(old, new)` adds the rules about what may change, and, like the
apiserver, lets through schema errors of values the update left as they were.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from core.api.admission_check import AdmissionCheck
from core.api.api_struct import ApiStruct
from core.api.cluster_queue import ClusterQueue
from core.api.cohort import Cohort
from core.api.local_queue import LocalQueue
from core.api.multikueue import MultiKueueCluster, MultiKueueConfig
from core.api.multikueue_cluster_set import MultiKueueClusterSet
from core.api.resource_flavor import ResourceFlavor
from core.api.topology import Topology
from core.api.validation.cluster_objects import (
    validate_admission_check_update,
    validate_multikueue_cluster,
    validate_multikueue_cluster_set,
    validate_multikueue_config,
    validate_resource_flavor,
    validate_resource_flavor_update,
    validate_topology,
    validate_topology_update,
)
from core.api.validation.field_errors import ErrorType, FieldError, summary
from core.api.validation.queues import (
    validate_cluster_queue,
    validate_cohort,
    validate_local_queue,
    validate_local_queue_update,
)
from core.api.validation.ratcheting import new_errors
from core.api.validation.schema_rules import validate_schema
from core.api.validation.workload import validate_workload, validate_workload_update
from core.api.workload import Workload

__all__ = ["ErrorType", "FieldError", "summary", "validate", "validate_update"]

_CREATE: dict[type[Any], Callable[[Any], list[FieldError]]] = {
    ClusterQueue: validate_cluster_queue,
    Cohort: validate_cohort,
    LocalQueue: validate_local_queue,
    ResourceFlavor: validate_resource_flavor,
    Workload: validate_workload,
    MultiKueueCluster: validate_multikueue_cluster,
    MultiKueueConfig: validate_multikueue_config,
    MultiKueueClusterSet: validate_multikueue_cluster_set,
    Topology: validate_topology,
}

_UPDATE: dict[type[Any], Callable[[Any, Any], list[FieldError]]] = {
    LocalQueue: validate_local_queue_update,
    ResourceFlavor: validate_resource_flavor_update,
    Workload: validate_workload_update,
    AdmissionCheck: validate_admission_check_update,
    Topology: validate_topology_update,
}


def validate(obj: ApiStruct) -> list[FieldError]:
    """Every problem with a new object; empty when the apiserver would accept it."""
    errors = validate_schema(obj)
    rules = _CREATE.get(type(obj))
    if rules is not None:
        errors.extend(rules(obj))
    return _unique(errors)


def validate_update(old: ApiStruct, new: ApiStruct) -> list[FieldError]:
    """Every problem with changing `old` into `new`."""
    if type(old) is not type(new):
        raise TypeError(f"cannot compare a {type(old).__name__} with a {type(new).__name__}")
    errors = new_errors(old, new, validate_schema(new))
    update_rules = _UPDATE.get(type(new))
    if update_rules is not None:
        errors.extend(update_rules(old, new))
    else:
        rules = _CREATE.get(type(new))
        if rules is not None:
            errors.extend(rules(new))
    return _unique(errors)


def _unique(errors: list[FieldError]) -> list[FieldError]:
    return list(dict.fromkeys(errors))

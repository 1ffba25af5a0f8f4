"""Typed kueue.x-k8s.io/v1beta2 (and fleetq.dev/v1alpha1) objects, defaults, validation, CRDs.

The structs are the single source of truth: field names and defaults match upstream Kueue,
the markers on each field drive both the generated CRDs (`python -m core.api.crdgen`) and
the Python validators, so the apiserver and the hub's webhooks agree.

Where to look:
- one module per kind group: `cluster_queue`, `cohort`, `local_queue`, `resource_flavor`,
  `workload` (+ `workload_conditions`, `topology_assignment`), `workload_priority_class`,
  `admission_check`, `multikueue`, `topology`, `worker_capacity` (fleetq's own kind);
  shared parts in `meta`, `core_v1`, `quota`, `fair_sharing`;
- `quantity`: parse "500m"/"4Gi" exactly into integers for the engine;
- `codec`: `decode(kind, bytes_or_dict)`, `decode_list`, `encode`, `to_builtins`, `deep_copy`;
- `registry`: every kind's group, version, plural, scope, short names and REST path;
- `validation`: `validate(obj)` and `validate_update(old, new)`;
- `crdgen`: the CRD generator; `markers`: the field annotations it reads.
"""

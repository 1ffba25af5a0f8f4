"""The Configuration's `featureGates`: the few of upstream v0.19's gates fleetq acts on.

Upstream reads gates from a command-line flag or the Configuration's `featureGates` map.
fleetq reads the map and sorts each gate into one of three groups:
- honoured: the gate changes what fleetq does, as it changes upstream (DisableWaitForPodsReady
  turns off v0.19's default-on waitForPodsReady; MultiKueueIncrementalDispatcherConfig=false
  makes the Incremental dispatcher ignore `stepSize`, as before v0.19;
  ElasticJobsViaWorkloadSlices=false turns off v0.19's default-on elastic jobs: the
  `kueue.x-k8s.io/elastic-job` annotation then means nothing; LocalQueueMetrics=false leaves
  the `kueue_local_queue_*` series empty; ConcurrentAdmission=true, alpha and off by
  default as upstream, acts on ClusterQueues' `concurrentAdmissionPolicy`: a variant
  Workload per flavor, see `core.engine.concurrent_admission`);
- fixed: fleetq always behaves as the gate's v0.19 default (or, for the kubeconfig path
  rules, as the gate's safe setting); asking for the other value is reported;
- anything else: reported as not supported, never silently dropped.
A value that is not a boolean is an error naming the gate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DISABLE_WAIT_FOR_PODS_READY = "DisableWaitForPodsReady"
INCREMENTAL_DISPATCHER_CONFIG = "MultiKueueIncrementalDispatcherConfig"
ELASTIC_JOBS = "ElasticJobsViaWorkloadSlices"
LOCAL_QUEUE_METRICS = "LocalQueueMetrics"
MULTIKUEUE_QUOTA_AUTOMATION = "MultiKueueManagerQuotaAutomation"
CONCURRENT_ADMISSION = "ConcurrentAdmission"

HONOURED: Mapping[str, bool] = {
    DISABLE_WAIT_FOR_PODS_READY: False,
    INCREMENTAL_DISPATCHER_CONFIG: True,
    ELASTIC_JOBS: True,
    LOCAL_QUEUE_METRICS: True,
    MULTIKUEUE_QUOTA_AUTOMATION: False,
    CONCURRENT_ADMISSION: False,
}
"""Gate → upstream v0.19's default."""

FIXED: Mapping[str, tuple[bool, str]] = {
    "MultiKueueIncrementalDispatcherRespectConfigOrder": (
        True,
        "the Incremental dispatcher always nominates workers in MultiKueueConfig order",
    ),
    "MultiKueueKubeConfigPathValidation": (
        True,
        "Path kubeconfigs must always lie under /etc/multikueue/kubeconfigs/",
    ),
}
"""Gate → (the value fleetq always behaves as, what that means)."""


class FeatureGateError(ValueError):
    """A gate's value is not a boolean, or `featureGates` is not a map."""


@dataclass(frozen=True, slots=True)
class FeatureGates:
    """The honoured gates' values, upstream's defaults where the file says nothing."""

    disable_wait_for_pods_ready: bool = HONOURED[DISABLE_WAIT_FOR_PODS_READY]
    incremental_dispatcher_config: bool = HONOURED[INCREMENTAL_DISPATCHER_CONFIG]
    elastic_jobs: bool = HONOURED[ELASTIC_JOBS]
    local_queue_metrics: bool = HONOURED[LOCAL_QUEUE_METRICS]
    multikueue_quota_automation: bool = HONOURED[MULTIKUEUE_QUOTA_AUTOMATION]
    concurrent_admission: bool = HONOURED[CONCURRENT_ADMISSION]


def parse_feature_gates(raw: Any, warnings: list[str]) -> FeatureGates:
    """Read `featureGates`; append a warning for every gate that has no effect."""
    if raw is None:
        return FeatureGates()
    if not isinstance(raw, Mapping):
        raise FeatureGateError("featureGates: expected a map of gate name to true/false")
    values: dict[str, bool] = dict(HONOURED)
    for name, value in raw.items():
        if not isinstance(value, bool):
            raise FeatureGateError(f"featureGates.{name}: expected true or false, got {value!r}")
        if name in HONOURED:
            values[name] = value
        elif name in FIXED:
            fixed, meaning = FIXED[name]
            if value != fixed:
                warnings.append(
                    f"featureGates.{name}: fleetq always behaves as {name}={str(fixed).lower()} "
                    f"({meaning}); ignored"
                )
        else:
            warnings.append(f"featureGates.{name}: not supported by fleetq; ignored")
    return FeatureGates(
        disable_wait_for_pods_ready=values[DISABLE_WAIT_FOR_PODS_READY],
        incremental_dispatcher_config=values[INCREMENTAL_DISPATCHER_CONFIG],
        elastic_jobs=values[ELASTIC_JOBS],
        local_queue_metrics=values[LOCAL_QUEUE_METRICS],
        multikueue_quota_automation=values[MULTIKUEUE_QUOTA_AUTOMATION],
        concurrent_admission=values[CONCURRENT_ADMISSION],
    )

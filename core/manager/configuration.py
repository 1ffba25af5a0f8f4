"""The hub's configuration file: upstream Kueue's `config.kueue.x-k8s.io/v1beta2` Configuration.

Users bring the file they already run upstream Kueue with. fleetq reads the fields it
implements, fills upstream's defaults, and reports — never silently drops — every field it
does not know or does not support, so a setting that has no effect is visible at start-up.
Malformed values (wrong types, bad durations, unknown frameworks) are errors that name the
field path. Defaults are upstream v0.19's (docs/upgrade.md lists what changed since v0.17):
waitForPodsReady is on unless `featureGates.DisableWaitForPodsReady` says otherwise, and
the client budget is 300 QPS / 500 burst.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from core.engine.dispatch.placement import CAPACITY_AWARE_DISPATCHER
from core.engine.dispatch.placement_policy import PlacementPolicy
from core.manager.feature_gates import FeatureGateError, FeatureGates, parse_feature_gates
from integrations.framework.registry import (
    DEFAULT_FRAMEWORKS,
    FrameworkRegistry,
    UnknownFramework,
)
from integrations.registry import REGISTRY

API_VERSION = "config.kueue.x-k8s.io/v1beta2"
KIND = "Configuration"

PREEMPTION_STRATEGIES = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")
ALL_AT_ONCE_DISPATCHER = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
INCREMENTAL_DISPATCHER = "kueue.x-k8s.io/multikueue-dispatcher-incremental"
DISPATCHERS = (CAPACITY_AWARE_DISPATCHER, ALL_AT_ONCE_DISPATCHER, INCREMENTAL_DISPATCHER)
DEFAULT_INCREMENTAL_STEP_SIZE = 3
"""Workers per Incremental round unless incrementalDispatcherConfig.stepSize says otherwise."""

# Every field path fleetq reads. Paths ending in ".*" accept any sub-keys (selectors).
_SUPPORTED = frozenset(
    {
        "apiVersion",
        "kind",
        "namespace",
        "manageJobsWithoutQueueName",
        "managedJobsNamespaceSelector.*",
        "waitForPodsReady.timeout",
        "waitForPodsReady.blockAdmission",
        "waitForPodsReady.recoveryTimeout",
        "waitForPodsReady.requeuingStrategy.timestamp",
        "waitForPodsReady.requeuingStrategy.backoffLimitCount",
        "waitForPodsReady.requeuingStrategy.backoffBaseSeconds",
        "waitForPodsReady.requeuingStrategy.backoffMaxSeconds",
        "integrations.frameworks",
        "fairSharing.preemptionStrategies",
        "multiKueue.gcInterval",
        "multiKueue.origin",
        "multiKueue.workerLostTimeout",
        "multiKueue.dispatcherName",
        "multiKueue.incrementalDispatcherConfig.stepSize",
        "multiKueue.incrementalDispatcherConfig.roundTimeout",
        "multiKueue.capacityAwareDispatcherConfig.nominationTimeout",
        "multiKueue.capacityAwareDispatcherConfig.placementPolicy",
        "multiKueue.workerClientConnection.qps",
        "multiKueue.workerClientConnection.burst",
        "clientConnection.qps",
        "clientConnection.burst",
        "leaderElection.leaderElect",
        "leaderElection.leaseDuration",
        "leaderElection.renewDeadline",
        "leaderElection.retryPeriod",
        "leaderElection.resourceName",
        "leaderElection.resourceNamespace",
        "leaderElection.resourceLock",
        "health.healthProbeBindAddress",
        "health.readinessEndpointName",
        "health.livenessEndpointName",
        "metrics.bindAddress",
        "metrics.enableClusterQueueResources",
        "webhook.port",
        "webhook.host",
        "webhook.certDir",
        "internalCertManagement.enable",
        "internalCertManagement.webhookServiceName",
        "internalCertManagement.webhookSecretName",
        "visibilityServer.bindPort",
        "visibilityServer.bindAddress",
        "featureGates.*",  # read by core.manager.feature_gates, which reports what it ignores
    }
)

DEFAULT_PODS_READY_TIMEOUT_SECONDS = 1800.0
"""waitForPodsReady.timeout when absent or 0 (upstream v0.19: 30 minutes)."""
DEFAULT_CLIENT_QPS = 300.0
DEFAULT_CLIENT_BURST = 500
"""clientConnection defaults since upstream v0.19 (20 and 30 before)."""


class ConfigurationError(ValueError):
    """The file cannot be used; the message names the field and what is wrong."""


@dataclass(frozen=True)
class RequeuingStrategy:
    timestamp: str = "Eviction"
    backoff_limit_count: int | None = None
    backoff_base_seconds: int = 60
    backoff_max_seconds: int = 3600


@dataclass(frozen=True)
class WaitForPodsReady:
    timeout_seconds: float = DEFAULT_PODS_READY_TIMEOUT_SECONDS
    block_admission: bool = False
    recovery_timeout_seconds: float | None = None
    requeuing: RequeuingStrategy = field(default_factory=RequeuingStrategy)


@dataclass(frozen=True)
class MultiKueueSettings:
    gc_interval_seconds: float = 60.0
    origin: str = "multikueue"
    worker_lost_timeout_seconds: float = 900.0
    dispatcher_name: str = CAPACITY_AWARE_DISPATCHER
    incremental_step_size: int = DEFAULT_INCREMENTAL_STEP_SIZE
    """Workers added per Incremental round (upstream's incrementalDispatcherConfig.stepSize)."""
    incremental_round_seconds: float = 300.0
    """Length of an Incremental round; fixed at 5 min upstream, fleetq lets it be set."""
    nomination_timeout_seconds: float = 60.0
    """fleetq's capacity-aware dispatcher: how long one nominee may take to admit."""
    placement_policy: PlacementPolicy = PlacementPolicy.SPREAD
    """fleetq's capacity-aware dispatcher: which of the workers that fit gets the job."""
    worker_client_qps: float = 50.0
    """fleetq's client budget towards each worker (upstream's clients run at client-go's
    5 QPS whatever the configuration says); about 2 writes per dispatched workload."""
    worker_client_burst: int = 100


@dataclass(frozen=True)
class LeaderElection:
    leader_elect: bool = True
    lease_duration_seconds: float = 15.0
    renew_deadline_seconds: float = 10.0
    retry_period_seconds: float = 2.0
    resource_name: str = "c1f6bfd2.kueue.x-k8s.io"
    resource_namespace: str | None = None


@dataclass(frozen=True)
class Configuration:
    """What the hub runs with, defaults filled in (upstream's, except the dispatcher).

    Built directly (tests, tools), waitForPodsReady is off; `parse_configuration` turns it
    on as upstream v0.19 does, so every configuration file, or none, gets upstream's default.
    """

    namespace: str = "kueue-system"
    manage_jobs_without_queue_name: bool = False
    managed_jobs_namespace_selector: Mapping[str, Any] = field(
        default_factory=lambda: {
            "matchExpressions": [
                {
                    "key": "kubernetes.io/metadata.name",
                    "operator": "NotIn",
                    "values": ["kube-system", "kueue-system"],
                }
            ]
        }
    )
    wait_for_pods_ready: WaitForPodsReady | None = None
    frameworks: tuple[str, ...] = DEFAULT_FRAMEWORKS
    frameworks_set: bool = False
    """`integrations.frameworks` was given (the agent defaults to every kind otherwise)."""
    fair_sharing_strategies: tuple[str, ...] | None = None
    multikueue: MultiKueueSettings = field(default_factory=MultiKueueSettings)
    client_qps: float = DEFAULT_CLIENT_QPS
    client_burst: int = DEFAULT_CLIENT_BURST
    feature_gates: FeatureGates = field(default_factory=FeatureGates)
    leader_election: LeaderElection = field(default_factory=LeaderElection)
    health_probe_bind_address: str = ":8081"
    metrics_bind_address: str = ":8443"
    enable_cluster_queue_resource_metrics: bool = False
    webhook_port: int = 9443
    webhook_host: str = ""
    webhook_cert_dir: str = "/tmp/k8s-webhook-server/serving-certs"
    internal_cert_management: bool = True
    webhook_service_name: str = "kueue-webhook-service"
    webhook_secret_name: str = "kueue-webhook-server-cert"
    visibility_bind_port: int = 8082

    @property
    def fair_sharing_enabled(self) -> bool:
        return self.fair_sharing_strategies is not None

    @functools.cached_property
    def job_kinds(self) -> FrameworkRegistry:
        """The registered job kinds `integrations.frameworks` enables (built once)."""
        return REGISTRY.enabled(self.frameworks)


@dataclass(frozen=True)
class LoadedConfiguration:
    configuration: Configuration
    warnings: tuple[str, ...]


_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(value: Any, path: str) -> float:
    """A Go duration string ("1m30s", "300ms", "0s") → seconds."""
    text = str(value).strip()
    if text in ("0", "0s"):
        return 0.0
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ConfigurationError(f"{path}: {value!r} is not a duration like '30s', '5m', '1h30m'")
    return sum(float(number) * _DURATION_UNITS[unit] for number, unit in parts)


def _unsupported_paths(data: Mapping[str, Any], prefix: str = "") -> list[str]:
    found = []
    for key, value in data.items():
        path = f"{prefix}{key}"
        if path in _SUPPORTED or f"{path}.*" in _SUPPORTED:
            continue
        if isinstance(value, Mapping) and any(s.startswith(path + ".") for s in _SUPPORTED):
            found.extend(_unsupported_paths(value, path + "."))
        else:
            found.append(path)
    return found


def _get(data: Mapping[str, Any], path: str, default: Any = None) -> Any:
    node: Any = data
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return default
        node = node[part]
    return node


def _typed(data: Mapping[str, Any], path: str, kind: type, default: Any) -> Any:
    value = _get(data, path, default)
    if value is default:
        return default
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ConfigurationError(f"{path}: expected {kind.__name__}, got {value!r}")
    return value


def _duration(data: Mapping[str, Any], path: str, default: float | None) -> float | None:
    value = _get(data, path)
    return default if value is None else parse_duration(value, path)


def _wait_for_pods_ready(
    data: Mapping[str, Any], gates: FeatureGates, warnings: list[str]
) -> WaitForPodsReady | None:
    """Upstream v0.19: on by default (timeout 30 min); only the DisableWaitForPodsReady gate
    turns it off. A timeout of 0 means the default, as upstream; a recovery timeout of 0s
    turns recovery checking off."""
    if gates.disable_wait_for_pods_ready:
        return None
    if "waitForPodsReady" in data and data["waitForPodsReady"] is None:
        warnings.append(
            "waitForPodsReady: null does not turn it off since upstream v0.19 (it is on, "
            "timeout 30m); set featureGates.DisableWaitForPodsReady: true to turn it off"
        )
    timeout = (
        _duration(data, "waitForPodsReady.timeout", None) or DEFAULT_PODS_READY_TIMEOUT_SECONDS
    )
    prefix = "waitForPodsReady.requeuingStrategy."
    timestamp = _typed(data, prefix + "timestamp", str, "Eviction")
    if timestamp not in ("Eviction", "Creation"):
        raise ConfigurationError(f"{prefix}timestamp: must be Eviction or Creation")
    requeuing = RequeuingStrategy(
        timestamp=timestamp,
        backoff_limit_count=_non_negative(data, prefix + "backoffLimitCount", None),
        backoff_base_seconds=_non_negative(data, prefix + "backoffBaseSeconds", 60),
        backoff_max_seconds=_non_negative(data, prefix + "backoffMaxSeconds", 3600),
    )
    return WaitForPodsReady(
        timeout_seconds=timeout,
        block_admission=_typed(data, "waitForPodsReady.blockAdmission", bool, False),
        recovery_timeout_seconds=_duration(data, "waitForPodsReady.recoveryTimeout", timeout),
        requeuing=requeuing,
    )


def _non_negative(data: Mapping[str, Any], path: str, default: int | None) -> Any:
    value = _typed(data, path, int, default)
    if value is not None and value < 0:
        raise ConfigurationError(f"{path}: must not be negative, got {value}")
    return value


def _frameworks(data: Mapping[str, Any], warnings: list[str]) -> tuple[str, ...]:
    raw = _get(data, "integrations.frameworks") or list(DEFAULT_FRAMEWORKS)
    if not isinstance(raw, list) or not all(isinstance(f, str) for f in raw):
        raise ConfigurationError("integrations.frameworks: expected a list of framework names")
    try:
        not_yet = REGISTRY.unsupported(raw)
    except UnknownFramework as error:
        raise ConfigurationError(f"integrations.frameworks: {error}") from None
    if not_yet:
        warnings.append(
            f"integrations.frameworks: {', '.join(not_yet)} not supported by fleetq yet; "
            f"jobs of those kinds are left alone (supported: {', '.join(REGISTRY.names)})"
        )
    return tuple(raw)


def _fair_sharing(data: Mapping[str, Any]) -> tuple[str, ...] | None:
    if _get(data, "fairSharing") is None:
        return None
    strategies = _get(data, "fairSharing.preemptionStrategies") or list(PREEMPTION_STRATEGIES)
    bad = [s for s in strategies if s not in PREEMPTION_STRATEGIES]
    if bad:
        raise ConfigurationError(
            f"fairSharing.preemptionStrategies: unknown {bad}; use {list(PREEMPTION_STRATEGIES)}"
        )
    return tuple(strategies)


def _multikueue(
    data: Mapping[str, Any], gates: FeatureGates, warnings: list[str]
) -> MultiKueueSettings:
    dispatcher = _typed(data, "multiKueue.dispatcherName", str, CAPACITY_AWARE_DISPATCHER)
    if not dispatcher:
        raise ConfigurationError(
            f"multiKueue.dispatcherName: must not be empty (built in: {', '.join(DISPATCHERS)}; "
            "any other name is an external dispatcher)"
        )
    _check_incremental_config_use(data, dispatcher)
    return MultiKueueSettings(
        gc_interval_seconds=_duration(data, "multiKueue.gcInterval", 60.0) or 0.0,
        origin=_typed(data, "multiKueue.origin", str, "multikueue"),
        worker_lost_timeout_seconds=_duration(data, "multiKueue.workerLostTimeout", 900.0) or 0.0,
        dispatcher_name=dispatcher,
        incremental_step_size=_step_size(data, gates, warnings),
        incremental_round_seconds=_positive_duration(
            data, "multiKueue.incrementalDispatcherConfig.roundTimeout", 300.0
        ),
        nomination_timeout_seconds=_positive_duration(
            data, "multiKueue.capacityAwareDispatcherConfig.nominationTimeout", 60.0
        ),
        placement_policy=_placement_policy(data),
        worker_client_qps=_positive_number(data, "multiKueue.workerClientConnection.qps", 50.0),
        worker_client_burst=int(
            _positive_number(data, "multiKueue.workerClientConnection.burst", 100)
        ),
    )


def _placement_policy(data: Mapping[str, Any]) -> PlacementPolicy:
    path = "multiKueue.capacityAwareDispatcherConfig.placementPolicy"
    value = _typed(data, path, str, PlacementPolicy.SPREAD.value)
    try:
        return PlacementPolicy(value)
    except ValueError:
        choices = ", ".join(policy.value for policy in PlacementPolicy)
        raise ConfigurationError(
            f"{path}: unknown policy {value!r}; use one of {choices}"
        ) from None


def _positive_number(data: Mapping[str, Any], path: str, default: float) -> float:
    value = _get(data, path, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigurationError(f"{path}: must be a positive number, got {value!r}")
    return float(value)


_INCREMENTAL_CONFIG_USERS = (INCREMENTAL_DISPATCHER, CAPACITY_AWARE_DISPATCHER)
"""The dispatchers that read incrementalDispatcherConfig (capacity-aware: its fallback)."""


def _check_incremental_config_use(data: Mapping[str, Any], dispatcher: str) -> None:
    """Upstream v0.19 refuses incrementalDispatcherConfig beside another dispatcher."""
    if _get(data, "multiKueue.incrementalDispatcherConfig") is None:
        return
    if dispatcher not in _INCREMENTAL_CONFIG_USERS:
        raise ConfigurationError(
            "multiKueue.incrementalDispatcherConfig: only valid when dispatcherName is "
            f"{INCREMENTAL_DISPATCHER} (or fleetq's {CAPACITY_AWARE_DISPATCHER}), "
            f"not {dispatcher}"
        )


def _step_size(data: Mapping[str, Any], gates: FeatureGates, warnings: list[str]) -> int:
    path = "multiKueue.incrementalDispatcherConfig.stepSize"
    step = _typed(data, path, int, DEFAULT_INCREMENTAL_STEP_SIZE)
    if step < 1:
        raise ConfigurationError(f"{path}: must be at least 1, got {step}")
    if not gates.incremental_dispatcher_config and step != DEFAULT_INCREMENTAL_STEP_SIZE:
        warnings.append(
            f"{path}: ignored while featureGates.MultiKueueIncrementalDispatcherConfig is "
            f"false (the step is {DEFAULT_INCREMENTAL_STEP_SIZE}, as upstream)"
        )
        return DEFAULT_INCREMENTAL_STEP_SIZE
    return int(step)


def _positive_duration(data: Mapping[str, Any], path: str, default: float) -> float:
    seconds = _duration(data, path, default)
    if seconds is None or seconds <= 0:
        raise ConfigurationError(f"{path}: must be a positive duration such as '30s'")
    return seconds


def _leader_election(data: Mapping[str, Any]) -> LeaderElection:
    p = "leaderElection."
    return LeaderElection(
        leader_elect=_typed(data, p + "leaderElect", bool, True),
        lease_duration_seconds=_duration(data, p + "leaseDuration", 15.0) or 15.0,
        renew_deadline_seconds=_duration(data, p + "renewDeadline", 10.0) or 10.0,
        retry_period_seconds=_duration(data, p + "retryPeriod", 2.0) or 2.0,
        resource_name=_typed(data, p + "resourceName", str, "c1f6bfd2.kueue.x-k8s.io"),
        resource_namespace=_typed(data, p + "resourceNamespace", str, None),
    )


def parse_configuration(data: Any) -> LoadedConfiguration:
    """Validate and default a Configuration given as parsed YAML."""
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigurationError("the configuration must be a mapping (a Configuration object)")
    api_version = data.get("apiVersion", API_VERSION)
    if api_version != API_VERSION or data.get("kind", KIND) != KIND:
        raise ConfigurationError(
            f"expected apiVersion {API_VERSION} kind {KIND}, got {api_version} {data.get('kind')}"
        )
    warnings = [f"{path}: not supported by fleetq; ignored" for path in _unsupported_paths(data)]
    try:
        gates = parse_feature_gates(_get(data, "featureGates"), warnings)
    except FeatureGateError as error:
        raise ConfigurationError(str(error)) from None
    selector = _get(data, "managedJobsNamespaceSelector")
    if selector is not None and not isinstance(selector, Mapping):
        raise ConfigurationError("managedJobsNamespaceSelector: expected a label selector")
    defaults = Configuration()
    configuration = Configuration(
        namespace=_typed(data, "namespace", str, defaults.namespace),
        manage_jobs_without_queue_name=_typed(data, "manageJobsWithoutQueueName", bool, False),
        managed_jobs_namespace_selector=selector or defaults.managed_jobs_namespace_selector,
        wait_for_pods_ready=_wait_for_pods_ready(data, gates, warnings),
        frameworks=_frameworks(data, warnings),
        frameworks_set=_get(data, "integrations.frameworks") is not None,
        fair_sharing_strategies=_fair_sharing(data),
        multikueue=_multikueue(data, gates, warnings),
        feature_gates=gates,
        client_qps=_typed(data, "clientConnection.qps", float, defaults.client_qps),
        client_burst=_typed(data, "clientConnection.burst", int, defaults.client_burst),
        leader_election=_leader_election(data),
        health_probe_bind_address=_typed(
            data, "health.healthProbeBindAddress", str, defaults.health_probe_bind_address
        ),
        metrics_bind_address=_typed(
            data, "metrics.bindAddress", str, defaults.metrics_bind_address
        ),
        enable_cluster_queue_resource_metrics=_typed(
            data, "metrics.enableClusterQueueResources", bool, False
        ),
        webhook_port=_typed(data, "webhook.port", int, defaults.webhook_port),
        webhook_host=_typed(data, "webhook.host", str, ""),
        webhook_cert_dir=_typed(data, "webhook.certDir", str, defaults.webhook_cert_dir),
        internal_cert_management=_typed(data, "internalCertManagement.enable", bool, True),
        webhook_service_name=_typed(
            data,
            "internalCertManagement.webhookServiceName",
            str,
            defaults.webhook_service_name,
        ),
        webhook_secret_name=_typed(
            data, "internalCertManagement.webhookSecretName", str, defaults.webhook_secret_name
        ),
        visibility_bind_port=_typed(
            data, "visibilityServer.bindPort", int, defaults.visibility_bind_port
        ),
    )
    return LoadedConfiguration(configuration, tuple(warnings))


def load_configuration(path: Path | None) -> LoadedConfiguration:
    """Read a Configuration file; no file means all defaults."""
    if path is None:
        return parse_configuration({})
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ConfigurationError(f"cannot read {path}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise ConfigurationError(f"{path} is not valid YAML: {exc}") from exc
    return parse_configuration(data)

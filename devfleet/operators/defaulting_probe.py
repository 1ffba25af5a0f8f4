"""Readiness that proves an operator's defaulting webhook serves: a dry-run create.

An operator's health URL answers before the apiserver calls its webhooks (a new webhook
configuration takes a moment to be picked up), and some operators' objects are unusable
without their defaulting (a JobSet without its Jobs' Indexed completion mode, a
LeaderWorkerSet without its restart policy). So readiness dry-run creates a small object
until it comes back with fields only the operator's webhook sets; nothing is stored.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from devfleet.operators.spec import OperatorError

if TYPE_CHECKING:
    from devfleet.operators.process import OperatorProcess

Json = dict[str, Any]


@dataclass(frozen=True, slots=True)
class DefaultingProbe:
    """What to dry-run create and how to tell the webhook ran."""

    kind: str
    """For messages: "JobSet"."""
    group: str
    version: str
    plural: str
    probe: Json
    defaulted: Callable[[Mapping[str, Any]], bool]


def wait_defaulted(
    process: OperatorProcess, timeout: float, probe: DefaultingProbe, namespace: str = "default"
) -> None:
    """Dry-run create `probe.probe` until it comes back defaulted by the webhook;
    OperatorError (with the operator's log tail) when it does not within `timeout`."""
    from kubernetes import client, config

    deadline = time.monotonic() + timeout
    last = ""
    with config.new_client_from_config(config_file=str(process.kubeconfig)) as api_client:
        api = client.CustomObjectsApi(api_client)
        while True:
            process.fail_if_exited()
            try:
                answer: Json = api.create_namespaced_custom_object(
                    probe.group,
                    probe.version,
                    namespace,
                    probe.plural,
                    probe.probe,
                    dry_run="All",
                )
                if probe.defaulted(answer):
                    return
                last = f"not defaulted: {json.dumps(answer.get('spec'))[:300]}"
            except client.ApiException as exc:
                last = f"HTTP {exc.status}: {str(exc.body)[:300]}"
            if time.monotonic() >= deadline:
                raise OperatorError(
                    f"{probe.kind}'s defaulting webhook on {process.label} did not answer in "
                    f"{timeout:.0f}s ({last}); log {process.log_path}:\n{process.log_tail()}"
                )
            time.sleep(0.2)

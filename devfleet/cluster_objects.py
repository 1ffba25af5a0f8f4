"""Set-up writes and reads the conformance runner makes on a fleet cluster.

Create-if-absent (an object a previous run left is kept, as the runner reuses a kept
fleet) and the Deployment Available check the stand-ins are waited on with.
"""

from __future__ import annotations

from typing import Any

from devfleet.cluster_access import ClusterAccess


def create_if_absent(member: ClusterAccess, manifest: dict[str, Any]) -> None:
    """Create the object; one already there (409) is left as it is."""
    from kubernetes import client, utils

    with member.api_client() as api_client:
        try:
            utils.create_from_dict(api_client, manifest)
        except utils.FailToCreateError as error:
            if not all(
                isinstance(e, client.ApiException) and e.status == 409 for e in error.api_exceptions
            ):
                raise


def deployment_available(member: ClusterAccess, namespace: str, name: str) -> bool:
    from kubernetes import client

    with member.api_client() as api_client:
        deployment = client.AppsV1Api(api_client).read_namespaced_deployment(name, namespace)
    conditions = deployment.status.conditions or []
    return any(c.type == "Available" and c.status == "True" for c in conditions)


WEBHOOK_CONFIGURATIONS = (
    "fleetq-mutating-webhook-configuration",
    "fleetq-validating-webhook-configuration",
)
"""What a fleetq process registers with `--webhook-url-host` (and removes on SIGTERM)."""


def delete_webhook_configurations(member: ClusterAccess) -> None:
    """Remove a killed process's fail-closed webhook configurations (best effort)."""
    import contextlib

    from kubernetes import client

    mutating, validating = WEBHOOK_CONFIGURATIONS
    with member.api_client() as api_client:
        api = client.AdmissionregistrationV1Api(api_client)
        with contextlib.suppress(client.ApiException):
            api.delete_mutating_webhook_configuration(mutating)
        with contextlib.suppress(client.ApiException):
            api.delete_validating_webhook_configuration(validating)

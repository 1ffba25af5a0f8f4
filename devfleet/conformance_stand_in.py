"""What upstream's e2e readiness checks look for, as objects a fleet cluster can honestly hold.

`test/util.WaitForKueueAvailability` (upstream v0.19.2) waits for, in the Kueue namespace
(`KUEUE_NAMESPACE`, default `kueue-system`):

1. Deployment `kueue-controller-manager` available: observedGeneration current, all
   replicas updated and available, none terminating, condition Available=True, and no
   container of its pods restarted;
2. every ready pod of that Deployment listed, by IP, in the EndpointSlices of Service
   `kueue-webhook-service`;
3. a dry-run create of a ResourceFlavor accepted (the webhook data path);
4. Lease `c1f6bfd2.kueue.x-k8s.io` renewed after the wait began.

fleetq runs out of cluster, so (1) and (2) are presence checks nothing else can answer: a
stand-in Deployment whose pods land on a kwok node (they run nothing; kwok makes them
Running and Ready with a pod IP) and a Service selecting them, so the real
kube-controller-manager fills the EndpointSlice. They never carry behaviour. (3) and (4)
are answered by the real hub: its webhooks registered by URL, and its leader election
holding that Lease in that namespace (`leaderElection.leaderElect: true`).

`singlecluster/extended` also waits for each job operator's Deployment (JobSet's, KubeRay's,
...) in upstream's namespaces for them. The real operators run out of cluster on the fleet
(devfleet.operators); their stand-ins are the same presence-only kind of Deployment.
"""

from __future__ import annotations

from core.api.json_types import JsonDict

KUEUE_NAMESPACE = "kueue-system"
DEPLOYMENT = "kueue-controller-manager"
WEBHOOK_SERVICE = "kueue-webhook-service"
LEADER_ELECTION_ID = "c1f6bfd2.kueue.x-k8s.io"
STAND_IN_LABELS = {"control-plane": "controller-manager", "fleetq.dev/conformance": "stand-in"}
STAND_IN_IMAGE = "fleetq.dev/conformance-stand-in:none"
"""Never pulled: kwok pods run nothing."""
STAND_IN_NOTE = (
    "fleetq conformance stand-in: present only for upstream's readiness checks; "
    "the fleetq hub (out of cluster) does the work"
)


def namespace_manifest(name: str = KUEUE_NAMESPACE) -> JsonDict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def deployment_manifest(namespace: str = KUEUE_NAMESPACE, name: str = DEPLOYMENT) -> JsonDict:
    """Kueue's stand-in by default; with a name, an operator's (its own selector label, so
    stand-ins sharing a namespace never select each other's pods)."""
    labels = (
        dict(STAND_IN_LABELS)
        if name == DEPLOYMENT
        else {"fleetq.dev/conformance": "stand-in", "fleetq.dev/stand-in-for": name}
    )
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": dict(labels),
            "annotations": {"fleetq.dev/note": STAND_IN_NOTE},
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": dict(labels)},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "containers": [
                        {
                            "name": "manager",
                            "image": STAND_IN_IMAGE,
                            "ports": [{"name": "webhook-server", "containerPort": 9443}],
                            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                        }
                    ],
                },
            },
        },
    }


def webhook_service_manifest(namespace: str = KUEUE_NAMESPACE) -> JsonDict:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": WEBHOOK_SERVICE,
            "namespace": namespace,
            "annotations": {"fleetq.dev/note": STAND_IN_NOTE},
        },
        "spec": {
            "selector": dict(STAND_IN_LABELS),
            "ports": [{"port": 443, "protocol": "TCP", "targetPort": 9443}],
        },
    }


MANAGER_CONFIG_MAP = "kueue-manager-config"
MANAGER_CONFIG_KEY = "controller_manager_config.yaml"


def manager_config_map_manifest(
    configuration_yaml: str, namespace: str = KUEUE_NAMESPACE
) -> JsonDict:
    """ConfigMap `kueue-manager-config`, where upstream's install keeps Kueue's
    Configuration and `util.GetKueueConfiguration` reads it (the MultiKueue suite takes
    `integrations.frameworks` from it for the workers' RBAC). Not a stand-in: it holds the
    very file the hub or agent on that cluster was started with. Changing it changes
    nothing until that process restarts, as with Kueue."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": MANAGER_CONFIG_MAP,
            "namespace": namespace,
            "annotations": {
                "fleetq.dev/note": "the Configuration the fleetq process on this cluster runs with"
            },
        },
        "data": {MANAGER_CONFIG_KEY: configuration_yaml},
    }

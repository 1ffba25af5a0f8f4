"""How code and tests reach the clusters of a running fleet: a name, a kubeconfig, a URL."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ClusterAccess:
    """One cluster of a fleet. `kubeconfig` carries its certificates inline."""

    name: str
    kubeconfig: Path
    server: str

    def api_client(self) -> Any:
        """A synchronous `kubernetes` ApiClient (for set-up code and tests, not hot paths)."""
        from kubernetes import config

        return config.new_client_from_config(config_file=str(self.kubeconfig))


@dataclass(frozen=True)
class RunningFleet:
    """The clusters of a fleet that is up: the manager first, then the workers."""

    name: str
    lite: bool
    manager: ClusterAccess
    workers: tuple[ClusterAccess, ...]

    @property
    def all(self) -> tuple[ClusterAccess, ...]:
        return (self.manager, *self.workers)

    def cluster(self, name: str) -> ClusterAccess:
        for member in self.all:
            if member.name == name:
                return member
        raise KeyError(f"fleet {self.name!r} has no cluster {name!r}")

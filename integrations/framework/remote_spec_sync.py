"""Optional capability: a kind whose manager-side spec edits reach the worker's copy after
dispatch (upstream's RemoteSpecSyncer, the MultiKueueRemoteSpecSync gate, on in 0.19).

By default MultiKueue creates a job's remote copy once and only copies status back. A
RayService's Serve applications (`spec.serveConfigV2`) may be edited while it serves, and
upstream forwards that field (an in-place Serve update on the worker). A kind like that
implements `SyncsRemoteSpec`; the MultiKueue job sync checks `isinstance(kind,
SyncsRemoteSpec)` on every pass where the remote copy exists and patches the copy with
what `remote_spec_patch` returns. Kinds without it are unaffected.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from integrations.framework.job_metadata import Job


@runtime_checkable
class SyncsRemoteSpec(Protocol):
    def remote_spec_patch(self, local: Job, remote: Job) -> dict[str, Any] | None:
        """A JSON merge patch carrying the manager's spec fields the worker's copy lacks,
        or None when the copy is in step (must be pure: it is asked on every pass)."""
        ...

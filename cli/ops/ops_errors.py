"""The one error every `fleetq` operations command turns into a message and an exit status."""

from __future__ import annotations

import enum


class ExitStatus(enum.IntEnum):
    """What a script can rely on after an operations command."""

    OK = 0
    FAILED = 1
    """The cluster said no, or could not be reached, or the object does not exist."""
    USAGE = 2
    """The arguments or the kubeconfig cannot be used; nothing was asked of a cluster."""


class OpsError(Exception):
    """A failure the user can act on: the message says what, with which object, what to do."""

    def __init__(self, message: str, status: ExitStatus = ExitStatus.FAILED) -> None:
        super().__init__(message)
        self.status = status


class NotFoundError(OpsError):
    """The object the user named does not exist."""


class ForbiddenError(OpsError):
    """The cluster refused the call for lack of permission (HTTP 403)."""

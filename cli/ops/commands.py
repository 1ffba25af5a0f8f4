"""Registers the everyday operations commands with `fleetq`'s parser."""

from __future__ import annotations

from typing import Any

from cli.ops import (
    describe_command,
    list_command,
    logs_command,
    status_command,
    stop_resume_command,
)


def register(commands: Any) -> None:
    status_command.register(commands)
    list_command.register(commands)
    describe_command.register(commands)
    stop_resume_command.register(commands)
    logs_command.register(commands)

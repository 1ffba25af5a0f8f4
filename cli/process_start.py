"""What `fleetq hub` and `fleetq agent` share: reading the configuration, and running until
signalled.

Errors and warnings go to stderr prefixed with the command, so an operator sees at once
which process refused which field; logging switches to JSON only once that is done.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from core.manager.configuration import Configuration, ConfigurationError, load_configuration
from core.manager.json_logging import configure_json_logging


def load_configuration_for(command: str, path: Path | None, log_level: str) -> Configuration | None:
    """The Configuration to run with, or None after reporting why there is none."""
    try:
        loaded = load_configuration(path)
    except ConfigurationError as error:
        print(f"{command}: {error}", file=sys.stderr)
        return None
    for warning in loaded.warnings:
        print(f"{command}: warning: {warning}", file=sys.stderr)
    configure_json_logging(log_level)
    return loaded.configuration


async def run_until_signalled(command: str, run: Callable[[], Awaitable[None]], client: Any) -> int:
    """Run the process's main coroutine until SIGTERM/SIGINT; always close its client.

    Exit status: 0 on a signal or a clean return, 1 when it stopped by itself (ManagerStopped).
    """
    from hub.app import ManagerStopped

    task = asyncio.current_task()
    assert task is not None
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, task.cancel)
    try:
        await run()
    except asyncio.CancelledError:
        return 0
    except ManagerStopped as error:
        print(f"{command}: {error}", file=sys.stderr)
        return 1
    finally:
        await client.close()
    return 0

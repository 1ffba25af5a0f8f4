"""What `fleetq hub` and `fleetq agent` both do before they start: read the configuration.

Errors and warnings go to stderr prefixed with the command, so an operator sees at once
which process refused which field; logging switches to JSON only once that is done.
"""

from __future__ import annotations

import sys
from pathlib import Path

from hub.configuration import Configuration, ConfigurationError, load_configuration
from hub.runtime.json_logging import configure_json_logging


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

"""`-o table|json|yaml`: tables for people, stable documents for scripts.

Scripts get the same view the table is drawn from (a msgspec Struct with camelCase keys),
never the table text, so a column can be renamed without breaking anyone.
"""

from __future__ import annotations

import argparse
import enum
import json
import sys
from typing import Any, TextIO

import msgspec
import yaml


class OutputFormat(enum.StrEnum):
    TABLE = "table"
    JSON = "json"
    YAML = "yaml"


def add_output_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o",
        "--output",
        type=_output_format,
        metavar="{table,json,yaml}",
        default=OutputFormat.TABLE,
        help="table (default), json or yaml",
    )


def _output_format(text: str) -> OutputFormat:
    try:
        return OutputFormat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"unknown output format {text!r} (choose from table, json, yaml)"
        ) from None


def view_document(view: Any) -> Any:
    """Plain dicts and lists of a view, with datetimes as RFC 3339 text."""
    return msgspec.to_builtins(view, enc_hook=str)


def print_document(view: Any, output: OutputFormat, stream: TextIO | None = None) -> None:
    """Write a view as JSON or YAML (the TABLE format is each command's own)."""
    out = stream or sys.stdout
    document = view_document(view)
    if output is OutputFormat.JSON:
        out.write(json.dumps(document, indent=2) + "\n")
    else:
        out.write(yaml.safe_dump(document, sort_keys=False, default_flow_style=False))


PIPE_WIDTH = 200
"""Columns when stdout is not a terminal: wide enough that piped tables do not wrap."""


def table_console() -> Any:
    """A rich Console for tables: the terminal's (or $COLUMNS) width, else PIPE_WIDTH."""
    import os

    from rich.console import Console

    width = None if sys.stdout.isatty() or "COLUMNS" in os.environ else PIPE_WIDTH
    return Console(highlight=False, markup=False, width=width)


def age_text(seconds: float | None) -> str:
    """`5s`, `3m20s`, `2d4h`; `-` when unknown (kubectl's AGE column)."""
    from cli.join.duration_text import format_duration

    return "-" if seconds is None else format_duration(max(seconds, 0.0))

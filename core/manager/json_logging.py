"""Structured JSON logs for the hub process: one object per line, with bound context.

Controllers bind what an event is about (`workload=ns/name`, `cluster_queue=...`,
`job=...`) and log an event name, never prose; this turns that into JSON lines on stderr
with a timestamp and level, so logs can be searched by workload key.
"""

from __future__ import annotations

import logging
import sys

import structlog

LEVELS = ("debug", "info", "warning", "error")


def configure_json_logging(level: str = "info") -> None:
    numeric = logging.getLevelName(level.upper())
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )

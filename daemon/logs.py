"""structlog, configured once by the composition root or the CLI.

JSON lines when stderr is not a terminal (systemd's journal, launchd's log file), a readable
console format when it is. Standard-library loggers (anthropic, httpx2, apscheduler, sqlalchemy)
are routed through the same formatter. Tracebacks never carry local variables, and the
``anthropic`` and HTTP loggers stay at WARNING or above: at DEBUG they dump request bodies, which
hold transcript text.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

import structlog

QUIET_LIBRARIES = (
    "anthropic",
    "httpx",
    "httpx2",
    "httpcore",
    "httpcore2",
    "apscheduler",
    "aiosqlite",
    "asyncpg",
    "watchfiles",
    "alembic",
)
LIBRARY_FLOOR = logging.WARNING


def configure_logging(*, level: str = "INFO", stream: TextIO | None = None, json: bool | None = None) -> None:
    stream = stream or sys.stderr
    as_json = (not stream.isatty()) if json is None else json
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.stdlib.ExtraAdder(),
    ]
    renderer: Any
    if as_json:
        exc_processors: list[Any] = [
            structlog.processors.ExceptionRenderer(
                structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
            )
        ]
        renderer = structlog.processors.JSONRenderer()
    else:
        exc_processors = []
        renderer = structlog.dev.ConsoleRenderer(
            exception_formatter=structlog.dev.RichTracebackFormatter(show_locals=False),
            colors=stream.isatty(),
        )
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        # Not cached: a module's logger follows the configuration in force (memd logs a few lines a
        # cycle, and a process that configures logging again, or a test capturing logs, sees it).
        cache_logger_on_first_use=False,
    )
    handler = logging.StreamHandler(stream)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                *exc_processors,
                renderer,
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in QUIET_LIBRARIES:
        logging.getLogger(name).setLevel(max(LIBRARY_FLOOR, root.level))

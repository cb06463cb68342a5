"""structlog, configured once by the composition root or the CLI.

JSON lines when stderr is not a terminal (systemd's journal, launchd's log file), a readable
console format when it is. Standard-library loggers (anthropic, httpx2, apscheduler, sqlalchemy)
are routed through the same formatter. Tracebacks never carry local variables, and the
``anthropic`` and HTTP loggers stay at WARNING or above: at DEBUG they dump request bodies, which
hold transcript text.

structlog is imported here without rich (nor, off Windows, colorama): ``structlog.dev`` imports
them whenever they are installed, for its console renderer's tracebacks and colours, and they would
stay in every process that logs, the idle daemon's included (about 4 MB of its memory). The console
format is unchanged: its colours are the same ANSI codes without colorama, and a traceback is drawn
by rich as before, rich being imported when the first traceback is drawn on the console.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from typing import Any, TextIO

NOT_FOR_STRUCTLOG = ("rich", "better_exceptions", *(() if sys.platform == "win32" else ("colorama",)))
"""What ``structlog.dev`` imports when it can and memd's logging does without (``rich`` is imported
when a traceback is drawn on the console)."""


@contextlib.contextmanager
def _hidden(names: tuple[str, ...]) -> Iterator[None]:
    """Within: importing any of ``names`` not imported yet fails (``ImportError``); after, it works."""
    hidden = [name for name in names if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # the import system's "not importable"
    try:
        yield
    finally:
        for name in hidden:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]


with _hidden(NOT_FOR_STRUCTLOG):
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
        renderer = structlog.dev.ConsoleRenderer(exception_formatter=rich_traceback, colors=stream.isatty())
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


def rich_traceback(sio: TextIO, exc_info: Any) -> None:
    """A traceback on the console: ``structlog.dev.RichTracebackFormatter(show_locals=False)``, with
    rich imported on the first traceback only."""
    from rich.console import Console
    from rich.traceback import Traceback

    formatter = structlog.dev.RichTracebackFormatter(show_locals=False)
    sio.write("\n")
    console = Console(file=sio, color_system=formatter.color_system, width=formatter.width)
    tb = Traceback.from_exception(
        *exc_info,
        show_locals=False,
        max_frames=formatter.max_frames,
        theme=formatter.theme,
        word_wrap=formatter.word_wrap,
        extra_lines=formatter.extra_lines,
        width=formatter.width,
        indent_guides=formatter.indent_guides,
        suppress=formatter.suppress,
    )
    tb.code_width = formatter.code_width
    console.print(tb)

"""How commands print: a short summary by default, every row behind ``-v``, nothing hard-wrapped.

Lines are printed whole: a word or a URL a script greps for is never split, whatever the width.
Tables fit the terminal they are shown on (``table_width``); when stdout is not a terminal they are
not fitted to anything.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import click

if TYPE_CHECKING:
    from rich.console import Console

F = TypeVar("F", bound=Callable[..., object])

SUMMARY_WIDTH = 80
"""The width a summary line is written to fit (a path or URL in it may make a line longer)."""


def verbose_option(command: F) -> F:
    """``-v``/``--verbose``: every row, not only what changed, failed or waits."""
    return click.option("-v", "--verbose", is_flag=True, help="List every row, not only the summary.")(
        command
    )


def table_width() -> int | None:
    """The width tables fit: the terminal's when stdout is one, else None (never fitted or wrapped)."""
    if not sys.stdout.isatty():
        return None
    import shutil  # with bz2, lzma and zlib: only on a terminal

    return shutil.get_terminal_size((SUMMARY_WIDTH, 24)).columns


UNFITTED_WIDTH = 1_000_000
"""The width rich lays out for when stdout is not a terminal: wide enough never to wrap a line."""


def console() -> Console:
    """A rich console on stdout that never inserts a line break of its own (``soft_wrap``), and lays
    out for the terminal's width, or, when stdout is not one, for no width at all (not rich's 80)."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:  # rich's own ends with status 1: ``daemon.cli.main`` decides
            raise BrokenPipeError

    return _Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else UNFITTED_WIDTH)

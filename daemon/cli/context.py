"""What every command shares: the CLI context (settings loaded once), one-line failures."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from daemon.exits import Exit

if TYPE_CHECKING:
    from daemon.config import LoadedSettings


ONE_SHOT_LOG_LEVEL = "WARNING"
"""The log level of every command but the daemon, unless ``--log-level`` says otherwise."""


@dataclass
class CliContext:
    config_path: Path | None
    log_level: str
    log_level_given: bool = False
    """``--log-level`` or ``MEMD_LOG_LEVEL`` was given (else the default)."""
    _loaded: LoadedSettings | None = field(default=None, repr=False)

    def loaded(self) -> LoadedSettings:
        """The settings, loaded once; a bad file or value exits with ``Exit.CONFIG`` and says why."""
        if self._loaded is None:
            from daemon.config import ConfigError, load_settings

            try:
                self._loaded = load_settings(self.config_path)
            except ConfigError as exc:
                fail(f"config error: {exc}", Exit.CONFIG)
        return self._loaded

    def configure_logging(self, *, daemon: bool = False) -> None:
        """Logs on stderr. A command that runs and ends logs warnings and errors only unless a level
        was given: its stdout is the summary, and INFO lines would bury it where both streams meet
        (a pipe, a CI log). The daemon (``daemon``) logs at the level, INFO by default, as JSON lines
        off a terminal; a command logs readable lines wherever stderr goes."""
        from daemon.logs import configure_logging

        level = self.log_level if daemon or self.log_level_given else ONE_SHOT_LOG_LEVEL
        # JSON lines are for the daemon's journal; a command's reader gets readable lines, pipe or not
        configure_logging(level=level, json=None if daemon else False)


def fail(message: str, code: Exit = Exit.FAILED) -> NoReturn:
    """One clear line on stderr, no traceback."""
    click.echo(f"memd: {message}", err=True)
    sys.exit(int(code))


pass_ctx = click.make_pass_decorator(CliContext)

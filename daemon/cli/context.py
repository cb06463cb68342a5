"""What every command shares: the CLI context (settings loaded once), one-line failures."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

if TYPE_CHECKING:
    from daemon.config import LoadedSettings

EXIT_FAILED = 1
"""A command that ran and failed (its reason is printed)."""
EXIT_CONFIG = 2
"""A bad config file or value: the file, the key and the problem are printed."""


@dataclass
class CliContext:
    config_path: Path | None
    log_level: str
    _loaded: LoadedSettings | None = field(default=None, repr=False)

    def loaded(self) -> LoadedSettings:
        """The settings, loaded once; a bad file or value exits with status 2 and says why."""
        if self._loaded is None:
            from daemon.config import ConfigError, load_settings

            try:
                self._loaded = load_settings(self.config_path)
            except ConfigError as exc:
                fail(f"config error: {exc}", EXIT_CONFIG)
        return self._loaded

    def configure_logging(self) -> None:
        from daemon.logs import configure_logging

        configure_logging(level=self.log_level)


def fail(message: str, code: int = 1) -> NoReturn:
    """One clear line on stderr, no traceback."""
    click.echo(f"memd: {message}", err=True)
    sys.exit(code)


pass_ctx = click.make_pass_decorator(CliContext)

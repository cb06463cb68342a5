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


@dataclass
class CliContext:
    config_path: Path | None
    log_level: str
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

    def configure_logging(self) -> None:
        from daemon.logs import configure_logging

        configure_logging(level=self.log_level)


def fail(message: str, code: Exit = Exit.FAILED) -> NoReturn:
    """One clear line on stderr, no traceback."""
    click.echo(f"memd: {message}", err=True)
    sys.exit(int(code))


pass_ctx = click.make_pass_decorator(CliContext)

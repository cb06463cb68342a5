"""memd's command line. It parses arguments, loads settings, and hands over; it holds no logic.

Top-level imports stay light (click only): each command imports what it needs inside its function,
so `memd status` never pays for the LLM client or the scheduler.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from daemon.cli.context import CliContext, fail
from daemon.exits import Exit
from pipeline import __version__

# Every command, as "module:attribute": a command's module is imported only when that command runs,
# so `memd status` or `memd recall` never pay for the others' imports.
COMMANDS = {
    "config": "daemon.cli.config:config_group",
    "scan": "daemon.cli.scan:scan_command",
    "run": "daemon.cli.run:run_command",
    "status": "daemon.cli.status:status_command",
    "redact": "daemon.cli.redact:redact_command",
    "publish": "daemon.cli.publish:publish_command",
    "recall": "daemon.cli.recall:recall_command",
    "hooks": "daemon.cli.hooks:hooks_group",
    "inbox": "daemon.cli.inbox:inbox_group",
    "forget": "daemon.cli.forget:forget_command",
    "consolidate": "daemon.cli.consolidate:consolidate_command",
    "memories": "daemon.cli.memories:memories_group",
    "service": "daemon.cli.service:service_group",
    "ui": "daemon.cli.ui:ui_command",
    "sync": "daemon.cli.sync:sync_command",
    "team": "daemon.cli.team:team_group",
    "mcp": "daemon.cli.mcp:mcp_group",
    "doctor": "daemon.cli.doctor:doctor_command",
}


class LazyCommands(click.Group):
    """A group whose subcommands (``lazy``: name -> ``"module:attribute"``) are imported on first use."""

    lazy: dict[str, str] = {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is not None or cmd_name not in self.lazy:
            return command
        module_name, attribute = self.lazy[cmd_name].split(":")
        loaded = getattr(importlib.import_module(module_name), attribute)
        assert isinstance(loaded, click.Command)
        self.add_command(loaded, cmd_name)
        return loaded


class LazyGroup(LazyCommands):
    """memd's commands (``COMMANDS``), each imported on first use; a usage error (an unknown option
    or command, a missing argument, in this group or any below it) exits with ``Exit.USAGE``."""

    lazy = COMMANDS

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        with _usage_status():
            try:
                return super().make_context(info_name, args, parent, **extra)
            except BrokenPipeError:  # --help, --version: printed while the arguments are read
                raise ReaderGone from None

    def invoke(self, ctx: click.Context) -> Any:
        with _usage_status():
            try:
                return super().invoke(ctx)
            except BrokenPipeError:  # click would turn it into status 1: ``main`` ends it as it is
                raise ReaderGone from None


class ReaderGone(Exception):
    """Standard output's reader closed the pipe (not an ``OSError``, which click answers itself)."""


class UsageError(click.UsageError):
    """click's usage error (same message and hint) with memd's own status."""

    exit_code = Exit.USAGE


@contextlib.contextmanager
def _usage_status() -> Iterator[None]:
    try:
        yield
    except UsageError:
        raise
    except click.UsageError as exc:
        raise UsageError(exc.format_message(), exc.ctx) from None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="memd", message="%(prog)s %(version)s")
@click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="The TOML config file (default: $MEMD_CONFIG, else $XDG_CONFIG_HOME/memd/config.toml).",
)
@click.option(
    "--log-level",
    envvar="MEMD_LOG_LEVEL",
    default="INFO",
    show_default=True,
    help="The daemon's log level (on stderr); other commands log warnings only unless it is given.",
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
)
@click.pass_context
def cli(ctx: click.Context, config_path: Path | None, log_level: str) -> None:
    """memd: durable memory for coding agents, built from their transcripts."""
    source = ctx.get_parameter_source("log_level")
    given = source is not None and source is not click.core.ParameterSource.DEFAULT
    ctx.obj = CliContext(config_path=config_path, log_level=log_level, log_level_given=given)


PRIVATE_UMASK = 0o077
"""Bits every file and folder memd creates leaves out: what it writes (extracts, keys, memory) is
the user's alone, 0600 files in 0700 folders, whatever the umask of the shell that started it
(a stricter umask stays as it is)."""


def main(argv: list[str] | None = None) -> None:
    from pipeline.errors import MemdError

    os.umask(os.umask(PRIVATE_UMASK) | PRIVATE_UMASK)
    try:
        try:
            code = cli.main(args=argv, prog_name="memd", standalone_mode=False)
        finally:
            sys.stdout.flush()  # what is still buffered meets a gone reader here, not at exit
    except (BrokenPipeError, ReaderGone):
        _reader_gone()
    except click.exceptions.Abort:
        fail("aborted", Exit.INTERRUPTED)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except MemdError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        fail("interrupted", Exit.INTERRUPTED)
    if isinstance(code, int):
        sys.exit(code)


def _reader_gone() -> None:
    """End quietly with ``Exit.READER_GONE``: standard output goes nowhere from here, so the
    interpreter's own last flush has nothing left to fail on."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, sys.stdout.fileno())
    os.close(null)
    sys.exit(Exit.READER_GONE)

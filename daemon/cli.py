"""memd's command line. It parses arguments, loads settings, and hands over; it holds no logic.

Top-level imports stay light (click only): each command imports what it needs inside its function,
so `memd status` never pays for the LLM client or the scheduler.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from daemon.cli_context import CliContext, fail
from pipeline import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
)
@click.pass_context
def cli(ctx: click.Context, config_path: Path | None, log_level: str) -> None:
    """memd: durable memory for coding agents, built from their transcripts."""
    ctx.obj = CliContext(config_path=config_path, log_level=log_level)


def _register() -> None:
    from daemon import cli_config, cli_hooks, cli_publish, cli_recall, cli_run, cli_status

    commands: list[Any] = [cli_config.config_group, cli_run.run_command, cli_status.status_command]
    commands += [cli_publish.publish_command, cli_recall.recall_command, cli_hooks.hooks_group]
    from daemon import cli_scan

    commands += [cli_scan.scan_command]
    from daemon import cli_service

    commands += [cli_service.service_group]
    from daemon import cli_forget, cli_inbox, cli_memories

    commands += [cli_inbox.inbox_group, cli_forget.forget_command, cli_memories.memories_group]
    from daemon import cli_redact

    commands += [cli_redact.redact_command]
    for command in commands:
        cli.add_command(command)


_register()


def main(argv: list[str] | None = None) -> None:
    from pipeline.errors import MemdError

    try:
        code = cli.main(args=argv, prog_name="memd", standalone_mode=False)
    except click.exceptions.Abort:
        fail("aborted", 130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except MemdError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        fail("interrupted", 130)
    except BrokenPipeError:
        sys.exit(0)
    if isinstance(code, int):
        sys.exit(code)

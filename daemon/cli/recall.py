"""`memd recall [--cwd DIR] [--format text|json|claude-hook]`: the memory of DIR's project.

Made for session-start hooks, so it must never hold up a session: it reads the memory
repository's files and nothing else (no state store, no pydantic settings), answers within
``--timeout-s``, and on any problem prints nothing and exits 0, the problem going to the log
(stderr). Its imports are kept to the standard library past click.

``python -m daemon.cli.recall [--config PATH] [OPTIONS]`` runs the same command without loading
every other memd command first (what ``memd hooks install`` writes into the hook).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from daemon.cli.context import CliContext, pass_ctx

DEFAULT_TIMEOUT_S = 3.0
FORMATS = ("text", "json", "claude-hook")


@click.command("recall")
@click.option(
    "--cwd", "cwd", type=click.Path(file_okay=False, path_type=Path), default=None, help="Default: here."
)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True)
@click.option(
    "--timeout-s", type=float, default=DEFAULT_TIMEOUT_S, show_default=True, help="Answer within this."
)
@pass_ctx
def recall_command(ctx: CliContext, cwd: Path | None, fmt: str, timeout_s: float) -> None:
    """Print the memory of DIR's project (digest and index, capped), fenced for memd's scanner."""
    try:
        out = _recall(ctx, cwd, fmt, timeout_s)
    except Exception as exc:
        _log_problem(ctx, exc)
        return
    if out:
        click.echo(out)


def _recall(ctx: CliContext, cwd: Path | None, fmt: str, timeout_s: float) -> str:
    from daemon.config import ConfigError, load_settings
    from pipeline.clock import SystemClock
    from pipeline.publish.recall import (
        RecallProblem,
        bounded,
        build_recall,
        hook_claude_home,
        hook_cwd,
        read_hook_input,
        render,
    )

    try:
        memory_dir = load_settings(ctx.config_path).settings.paths.memory_dir
    except ConfigError as exc:
        raise RecallProblem(f"config error: {exc}") from None
    today = SystemClock().now().date()

    def work() -> str:
        directory = str(cwd) if cwd is not None else None
        claude = None  # the hook's Claude Code: what it loads from memd's published copy is left out
        if directory is None and fmt == "claude-hook":
            hook = read_hook_input(sys.stdin)
            directory, claude = hook_cwd(hook), hook_claude_home(hook)
        recall = build_recall(memory_dir, directory or os.getcwd(), today=today, claude_home=claude)
        return render(recall, fmt)

    return bounded(work, timeout_s)


def _log_problem(ctx: CliContext, exc: BaseException) -> None:
    try:
        ctx.configure_logging()
        import structlog

        structlog.get_logger("daemon.cli.recall").warning(
            "recall_failed", reason=str(exc) or type(exc).__name__
        )
    except Exception:
        pass


def main(argv: list[str] | None = None) -> None:
    """``memd [--config PATH] recall ...`` as its own program, for hooks."""
    args = list(sys.argv[1:] if argv is None else argv)
    config: Path | None = None
    if len(args) >= 2 and args[0] == "--config":
        config, args = Path(args[1]), args[2:]
    context = CliContext(config_path=config, log_level="WARNING")
    recall_command.main(args=args, prog_name="memd recall", obj=context)


if __name__ == "__main__":
    main()

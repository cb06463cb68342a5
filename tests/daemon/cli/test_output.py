"""What commands print: a short summary of what changed, what failed and what waits, every row
behind ``-v``, no log line on stdout, nothing hard-wrapped or cut."""

from __future__ import annotations

import asyncio
import io
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from daemon.actions import publish_lines
from daemon.cli import cli
from daemon.config import load_settings
from daemon.exits import Exit
from pipeline.clock import SystemClock
from pipeline.publish.run import PublishReport, publish_all
from pipeline.publish.sentinel import BEGIN, END
from pipeline.redaction import Redactor
from pipeline.store import open_store
from pipeline.vocabulary import PublishOutcome
from tests.configs import write_config
from tests.daemon.cli.test_phase2 import SCOPE, _config, _consolidate
from tests.daemon.cli.test_publish import _record_scope, _setup
from tests.fakes.anthropic_api import FakeAnthropicAPI, ScriptedResponder
from tests.fakes.fixtures import FAKE_API_KEY
from tests.pipeline.consolidate.support import Env, write_memory

ENV = {"ANTHROPIC_API_KEY": FAKE_API_KEY}


async def _extract(tmp_path: Path, config: Path, session_id: str) -> None:
    """An extract of ``session_id`` for /work/acme, ready to consolidate."""
    settings = load_settings(config).settings
    store = await open_store(settings.paths.state_db)
    try:
        env = Env(tmp_path, store, SystemClock(), None, settings, None, Redactor(b"cli-test-key-0123456789"))  # type: ignore[arg-type]
        await env.add_extract(session_id)
    finally:
        await store.close()


def test_run_once_in_inbox_mode_says_how_many_runs_wait_and_how_to_review_them(
    tmp_path: Path, fake_api: FakeAnthropicAPI
) -> None:
    config = _config(tmp_path, fake_api.base_url)
    fake_api.responder = ScriptedResponder(write_memory())
    asyncio.run(_extract(tmp_path, config, "sess-1"))
    done = CliRunner().invoke(cli, ["--config", str(config), "run", "--once"], env=ENV)
    assert done.exit_code == Exit.OK, done.output
    assert "consolidate  ok" in done.stdout  # the run made now waits in the inbox
    assert "1 consolidation run waits for review: `memd inbox`" in done.stdout
    assert _log_lines(done.stdout) == []
    assert _log_lines(done.stderr) == []  # the steps' INFO lines would bury the summary in a CI log
    again = CliRunner().invoke(cli, ["--config", str(config), "run", "--once"], env=ENV)
    assert again.exit_code == Exit.OK, again.output
    assert "consolidate  skipped" in again.stdout  # the scope waits for its review: nothing to run
    assert "1 consolidation run waits for review: `memd inbox`" in again.stdout


def _publish_config(tmp_path: Path) -> Path:
    return write_config(tmp_path)


def _log_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if '"event":' in line or "[info" in line]


def test_a_command_logs_only_warnings_unless_a_level_is_given_and_never_on_stdout(tmp_path: Path) -> None:
    config = _publish_config(tmp_path)
    runner = CliRunner()
    quiet = runner.invoke(cli, ["--config", str(config), "publish"])
    assert quiet.exit_code == Exit.OK, quiet.output
    assert _log_lines(quiet.stdout) == []
    assert _log_lines(quiet.stderr) == []  # where stdout and stderr meet, the summary stands alone
    asked = runner.invoke(cli, ["--config", str(config), "--log-level", "INFO", "publish"])
    assert asked.exit_code == Exit.OK, asked.output
    assert _log_lines(asked.stdout) == []
    assert any("[info" in line for line in _log_lines(asked.stderr))  # readable lines, not JSON (issue 36)
    by_env = runner.invoke(cli, ["--config", str(config), "publish"], env={"MEMD_LOG_LEVEL": "INFO"})
    assert any("[info" in line for line in _log_lines(by_env.stderr))


def _scope_with_project(tmp_path: Path) -> tuple[Path, Path]:
    """test_publish's installation with its project recorded: claude_code and agents_md both publish."""
    config, project = _setup(tmp_path)
    asyncio.run(_record_scope(tmp_path / "state.db", project))
    return config, project


def test_publish_lists_what_changed_and_counts_what_it_skipped(tmp_path: Path) -> None:
    config, project = _setup(tmp_path)  # no project recorded for the scope: every target skips
    runner = CliRunner()
    short = runner.invoke(cli, ["--config", str(config), "publish"])
    assert short.exit_code == Exit.OK, short.output
    assert "no project path is recorded" not in short.stdout  # the skipped rows are behind -v
    assert short.stdout.splitlines()[-1] == "2 targets: changed 0, failed 0, skipped 2 (-v lists them)"
    every = runner.invoke(cli, ["--config", str(config), "publish", "-v"])
    assert every.exit_code == Exit.OK, every.output
    assert every.stdout.count("no project path is recorded for this scope") == 2
    assert every.stdout.splitlines()[-1] == "2 targets: changed 0, failed 0, skipped 2"

    asyncio.run(_record_scope(tmp_path / "state.db", project))
    wrote = runner.invoke(cli, ["--config", str(config), "publish"])
    assert wrote.exit_code == Exit.OK, wrote.output
    assert str(project / "AGENTS.md") in wrote.stdout  # what changed is always listed
    assert wrote.stdout.splitlines()[-1].startswith("2 targets: changed 2, failed 0")


def test_publish_counts_a_refused_target_as_failed(tmp_path: Path) -> None:
    config, project = _scope_with_project(tmp_path)
    # The user's AGENTS.md holds two memd blocks with their own text between: memd leaves it alone.
    (project / "AGENTS.md").write_text(f"# Mine\n{BEGIN}\nold\n{END}\nthe user's line\n{BEGIN}\nx\n{END}\n")
    done = CliRunner().invoke(cli, ["--config", str(config), "publish"])
    assert done.exit_code == Exit.FAILED, done.output
    assert "refused" in done.stdout
    assert str(project / "AGENTS.md") in done.stdout
    assert done.stdout.splitlines()[-1] == "2 targets: changed 1, failed 1 (1 refused)"


def test_every_summary_line_fits_80_columns_and_no_line_is_cut(tmp_path: Path) -> None:
    config, _ = _setup(tmp_path)
    done = CliRunner().invoke(cli, ["--config", str(config), "publish"])
    assert all(len(line) <= 80 for line in done.stdout.splitlines()), done.stdout


def test_inbox_accept_and_forget_count_the_skipped_targets_and_list_them_with_v(
    tmp_path: Path, fake_api: FakeAnthropicAPI
) -> None:
    config = _config(tmp_path, fake_api.base_url)
    fake_api.responder = ScriptedResponder(write_memory())
    run_id = asyncio.run(_consolidate(tmp_path, config))
    runner = CliRunner()
    base = ["--config", str(config)]
    accepted = runner.invoke(cli, [*base, "inbox", "accept", "-v", run_id], env=ENV)
    assert accepted.exit_code == Exit.OK, accepted.output
    assert accepted.stdout.startswith("accepted: the memory repository is at ")
    skipped = accepted.stdout.count(f"published {SCOPE} to ")  # no project folder: every target skips
    assert skipped >= 1
    assert accepted.stdout.count(": skipped") == skipped
    assert "(-v lists them)" not in accepted.stdout

    report = asyncio.run(_publish(config))  # what accept and forget print about publishing
    assert [r.outcome for r in report.results].count(PublishOutcome.SKIPPED) == skipped
    short = publish_lines(report)
    assert not any(line.startswith(f"published {SCOPE} to ") for line in short)  # no skipped row
    assert (
        short[-1]
        == f"published copies: skipped {skipped} target{'s' if skipped != 1 else ''} (-v lists them)"
    )
    assert all(len(line) <= 80 for line in short)
    every = publish_lines(report, verbose=True)
    assert sum(line.startswith(f"published {SCOPE} to ") for line in every) == skipped
    unknown = runner.invoke(cli, [*base, "forget", "-v", "--session", "no-such-session"], env=ENV)
    assert unknown.exit_code == Exit.FAILED, unknown.output  # -v is an option of forget too


async def _publish(config: Path) -> PublishReport:
    settings = load_settings(config).settings
    store = await open_store(settings.paths.state_db)
    try:
        return await publish_all(store, settings, SystemClock())
    finally:
        await store.close()


URL = "https://api.example.com/v1/messages/batches/msgbatch_0123456789abcdef?after=2026-11-01T12:00:00Z"


def test_run_once_lines_are_never_wrapped_when_stdout_is_not_a_terminal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from daemon.cli.run import Progress
    from daemon.cycle import Skipped, StepResult
    from pipeline.vocabulary import StepOutcome

    now = datetime.now(UTC)
    reason = "the API could not be reached at " + " ".join([URL] * 3)  # far beyond 80 or 200 columns
    progress = Progress(dry_run=False)
    progress.end(StepResult("extract", StepOutcome.FAILED, now, now, 0.5, Skipped(reason), error=URL))
    [line] = capsys.readouterr().out.splitlines()
    assert line.startswith("extract")
    assert line.endswith("(reason below)")  # a failure's error goes to stderr once (issue 36)
    assert line.count(URL) == 3


class Terminal(io.StringIO):
    """Where a terminal of 80 columns would show the output."""

    def isatty(self) -> bool:
        return True


def test_a_dry_run_table_on_an_80_column_terminal_shows_whole_session_ids(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from daemon.cli.run import Progress
    from daemon.cycle import StepResult
    from pipeline.vocabulary import StepOutcome

    ids = ["0198a7c2-1111-7000-8000-aaaaaaaaaaaa", "0198a7c2-1111-7000-8000-bbbbbbbbbbbb"]
    report = {
        "would_extract": [
            {
                "source": "claude_code",
                "session_id": sid,
                "project": "/home/dev/src/" + "very-long-project-name-" * 2,
                "rendered_tokens": 12000,
                "request_tokens": 13000,
                "estimated_cost_usd": 0.0123,
            }
            for sid in ids
        ]
    }
    now = datetime.now(UTC)
    terminal = Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("TERM", "dumb")
    Progress(dry_run=True).end(StepResult("extract", StepOutcome.OK, now, now, 0.1, report))
    lines = terminal.getvalue().splitlines()
    for sid in ids:
        assert sum(sid in line for line in lines) == 1
    assert all(len(line) <= 80 for line in lines), lines
    assert "rendered tokens" in terminal.getvalue()


def test_status_is_not_hard_wrapped_when_stdout_is_not_a_terminal(tmp_path: Path) -> None:
    deep = tmp_path / ("a-folder-with-a-long-name-" * 4) / "memd"
    deep.mkdir(parents=True)
    config = _publish_config(deep)
    done = CliRunner().invoke(cli, ["--config", str(config), "status"])
    assert done.exit_code == Exit.FAILED, done.output  # no daemon runs
    assert any(str(config) in line for line in done.stdout.splitlines()), done.stdout

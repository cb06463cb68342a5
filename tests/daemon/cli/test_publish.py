"""`memd publish [--dry-run] [--json]` end to end against a SQLite store in tmp_path."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from daemon.cli import cli
from pipeline.projects import scope_for


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    memory = tmp_path / "memory"
    project = tmp_path / "src" / "app"
    project.mkdir(parents=True)
    scope_dir = memory / scope_for(str(project))
    scope_dir.mkdir(parents=True)
    (scope_dir / "memory_summary.md").write_text("App digest.\n")
    (scope_dir / "a.md").write_text(
        "---\nname: A\ndescription: d\ntype: project\nupdated: 2026-10-30\n---\nbody\n"
    )
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    config = tmp_path / "memd.toml"
    config.write_text(
        "[paths]\n"
        f'memory_dir = "{memory}"\n'
        f'state_db = "sqlite:///{tmp_path / "state.db"}"\n'
        f'state_dir = "{tmp_path / "state"}"\n'
        "[sources.claude_code]\n"
        f'root = "{home / ".claude" / "projects"}"\n'
        "[sources.gemini_cli]\n"
        f'root = "{home / ".gemini" / "tmp"}"\n'
        "[publish]\ngemini = false\nqwen_code = false\nagents_md = true\n"
    )
    return config, project


async def _record_scope(db: Path, project: Path) -> None:
    from datetime import UTC, datetime

    from pipeline.store import open_store
    from pipeline.store.schema import scopes

    store = await open_store(f"sqlite:///{db}")
    try:
        async with store.write() as conn:
            await conn.execute(
                scopes.insert().values(
                    key=scope_for(str(project)), project=str(project), updated_at=datetime.now(UTC)
                )
            )
    finally:
        await store.close()


def test_publish_dry_run_then_publish(tmp_path: Path) -> None:
    config, project = _setup(tmp_path)
    runner = CliRunner()
    # No project recorded for the scope yet: each target says why it skipped.
    result = runner.invoke(cli, ["--config", str(config), "publish", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert {(r["target"], r["outcome"]) for r in report["results"]} == {
        ("claude_code", "skipped"),
        ("agents_md", "skipped"),
    }
    assert all(r["reason"] == "no project path is recorded for this scope" for r in report["results"])

    asyncio.run(_record_scope(tmp_path / "state.db", project))
    result = runner.invoke(cli, ["--config", str(config), "publish", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "would_publish" in result.stdout
    assert f"would write {project / 'AGENTS.md'}" in result.stdout
    assert not (project / "AGENTS.md").exists()

    result = runner.invoke(cli, ["--config", str(config), "publish"])
    assert result.exit_code == 0, result.output
    assert "App digest." in (project / "AGENTS.md").read_text()
    assert "changed 2, failed 0" in result.stdout


def test_publish_before_the_first_consolidation_is_skipped_and_exits_0(tmp_path: Path) -> None:
    config, _project = _setup(tmp_path)
    shutil.rmtree(tmp_path / "memory")
    runner = CliRunner()
    result = runner.invoke(cli, ["--config", str(config), "publish"])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"skipped: nothing consolidated yet: {tmp_path / 'memory'} does not exist"
    result = runner.invoke(cli, ["--config", str(config), "publish", "--json"])
    assert result.exit_code == 0, result.output
    (only,) = json.loads(result.stdout)["results"]
    assert (only["target"], only["outcome"]) == ("*", "skipped")


def test_each_scope_is_shown_with_its_project_folder() -> None:
    from datetime import UTC, datetime

    from daemon.cli.publish import result_lines
    from pipeline.publish.run import PublishReport, TargetResult
    from pipeline.vocabulary import PublishOutcome

    now = datetime.now(UTC)
    results = (
        TargetResult("agents_md", "projects/app-1a2b3c4d", "/src/app/AGENTS.md", PublishOutcome.PUBLISHED),
        TargetResult("codex", "global", "/h/.codex/memories", PublishOutcome.PUBLISHED),
    )
    report = PublishReport(
        False, now, now, results, {"projects/app-1a2b3c4d": ["/src/app", "/src/app-clone"]}
    )
    lines = result_lines(report, verbose=True)
    assert "projects/app-1a2b3c4d (/src/app, /src/app-clone)" in lines[0]
    assert lines[2].endswith("global")


def test_a_run_s_publish_line_says_where_memory_went_not_results_24() -> None:
    """Issue 36: `memd run --once` printed ``publish ok results=24``."""
    from datetime import UTC, datetime

    from daemon.cli.run import summarize
    from pipeline.publish.run import PublishReport, TargetResult
    from pipeline.vocabulary import PublishOutcome

    at = datetime(2026, 12, 7, tzinfo=UTC)
    wrote = TargetResult(
        "claude_code",
        "global",
        "/h/.claude/CLAUDE.md",
        PublishOutcome.PUBLISHED,
        written=("/h/.claude/CLAUDE.md",),
    )
    same = TargetResult("gemini", "global", "/h/.gemini/GEMINI.md", PublishOutcome.UNCHANGED)
    line = summarize(PublishReport(False, at, at, (wrote, same)))
    assert (
        line
        == "2 targets: changed 1, failed 0, unchanged 1; wrote /h/.claude/CLAUDE.md (memd publish -v lists them)"
    )
    assert (
        summarize(PublishReport(False, at, at, (same,)))
        == "1 targets: changed 0, failed 0, unchanged 1; current in gemini"
    )

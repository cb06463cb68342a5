"""`memd forget` is complete when it returns: rewritten, published, purged, and it says where."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from daemon.cli import cli
from pipeline.projects import scope_for
from tests.daemon.cli.test_inbox import ENV, config_for, project_of, propose, published
from tests.fakes.anthropic_api import FakeAnthropicAPI, ScriptedResponder
from tests.pipeline.consolidate.support import write_memory


def test_forget_withdraws_the_published_copy_in_the_same_command(
    tmp_path: Path, fake_api: FakeAnthropicAPI
) -> None:
    config = config_for(tmp_path, fake_api.base_url)
    scope = scope_for(project_of(tmp_path))
    base = ["--config", str(config)]
    runner = CliRunner()
    fake_api.responder = ScriptedResponder(write_memory())
    run_id = propose(tmp_path, config, "sess-1")
    assert runner.invoke(cli, [*base, "inbox", "accept", run_id], env=ENV).exit_code == 0
    assert any(n.endswith("memd-testing.md") for n in published(tmp_path))

    forgot = runner.invoke(cli, [*base, "forget", "--session", "sess-1"], env=ENV)
    assert forgot.exit_code == 0, forgot.output
    assert f"{scope}: cleared" in forgot.output
    assert not any(n.endswith("memd-testing.md") for n in published(tmp_path))
    assert "Run `make test`." not in "".join(published(tmp_path).values())
    assert "state store: " in forgot.output
    assert "from the database file" in forgot.output
    assert f"published {scope} to claude_code: withdrawn" in forgot.output
    assert "git history" in forgot.output


def test_forgetting_a_session_only_pending_in_the_inbox_succeeds_and_says_what_it_did(
    tmp_path: Path, fake_api: FakeAnthropicAPI
) -> None:
    config = config_for(tmp_path, fake_api.base_url)
    scope = scope_for(project_of(tmp_path))
    base = ["--config", str(config)]
    runner = CliRunner()
    fake_api.responder = ScriptedResponder(write_memory())
    run_id = propose(tmp_path, config, "sess-1")
    forgot = runner.invoke(cli, [*base, "forget", "--session", "sess-1"], env=ENV)
    assert forgot.exit_code == 0, forgot.output
    assert f"dropped pending review {run_id}" in forgot.output
    assert f"{scope}: unchanged" in forgot.output
    assert "skipped" not in forgot.output

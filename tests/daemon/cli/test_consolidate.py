"""`memd consolidate [SCOPE|PATH] [--dry-run]`: runs now what waits, after saying what it will send
(the first request, measured as the run builds it) and the most the run may spend."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner, Result

from daemon.cli import cli
from pipeline.projects import scope_for
from tests.configs import write_config
from tests.daemon.cli.test_forget_finishes import ENV, NO_KEY, failing, head_text, published, with_store
from tests.fakes.anthropic_api import FakeAnthropicAPI
from tests.pipeline.consolidate.support import Env
from tests.pipeline.sync.support import agent


def config_for(tmp_path: Path, base_url: str) -> Path:
    """The default schedule: a scope cools down for hours after a run."""
    (tmp_path / "home" / ".claude" / "projects").mkdir(parents=True)
    (tmp_path / "acme").mkdir()
    return write_config(
        tmp_path,
        "[sources.claude_code]\n"
        f'root = "{tmp_path / "home" / ".claude" / "projects"}"\n'
        f'[llm]\nbase_url = "{base_url}"\n'
        "[publish]\ngemini = false\n",
    )


def extract(tmp_path: Path, config: Path, session: str) -> None:
    async def work(env: Env) -> None:
        await env.add_extract(
            session, project=str(tmp_path / "acme"), summary=f"{session} summary", raw=f"- {session} raw note"
        )

    with_store(tmp_path, config, work)


def consolidate(config: Path, *args: str, env: dict[str, str] = ENV) -> Result:
    return CliRunner().invoke(cli, ["--config", str(config), "consolidate", *args], env=env)


def _first_request_bytes(body: dict[str, object]) -> int:
    system = body["system"]
    text = system if isinstance(system, str) else "".join(b["text"] for b in system)  # type: ignore[attr-defined,index]
    messages = body["messages"]
    first = messages[0]["content"]  # type: ignore[index]
    user = first if isinstance(first, str) else "".join(b.get("text", "") for b in first)
    return len((text + user).encode("utf-8"))


def test_dry_run_says_what_it_would_send_and_spend_and_sends_and_writes_nothing_then_the_run_sends_it(
    tmp_path: Path, fake_api: FakeAnthropicAPI
) -> None:
    config = config_for(tmp_path, fake_api.base_url)
    fake_api.responder = agent
    extract(tmp_path, config, "sess-1")
    first = consolidate(config)
    assert first.exit_code == 0, first.output
    scope = scope_for(str(tmp_path / "acme"))
    assert f"{scope}: committed" in first.output
    assert "sess-1" in published(tmp_path)

    extract(tmp_path, config, "sess-2")  # within the cooldown: the schedule would wait hours
    head, calls = head_text(tmp_path), len(fake_api.message_requests())
    dry = consolidate(config, "--dry-run", str(tmp_path / "acme"))
    assert dry.exit_code == 0, dry.output
    assert len(fake_api.message_requests()) == calls
    assert head_text(tmp_path) == head
    assert "sess-2" not in published(tmp_path)
    measured = re.search(
        rf"{re.escape(scope)}: 2 input\(s\), 1 new, 0 removed; INCREMENTAL: the first request is ([\d,]+) bytes, about ([\d,]+) tokens",
        dry.output,
    )
    assert measured, dry.output
    assert "each run may spend at most 1,500,000 tokens over 60 turns on claude-sonnet-5-5" in dry.output
    assert re.search(r"at most \$\d+\.\d\d per run", dry.output)
    # issue 36: not only the first request and the ceiling: what a run usually costs, measured here
    assert re.search(
        r"a typical run here costs about \$\d+\.\d\d \(median of the last 1 run\(s\)\)", dry.output
    )
    assert "dry run: nothing sent, nothing written" in dry.output

    done = consolidate(config, "acme")  # the short name of the scope
    assert done.exit_code == 0, done.output
    assert measured.group(0) in done.output
    [sent] = [r.json for r in fake_api.message_requests()[calls : calls + 1]]
    assert _first_request_bytes(sent) == int(measured.group(1).replace(",", ""))
    assert f"{scope}: committed" in done.output
    assert re.search(r"spent [\d,]+ tokens in \d+ turn\(s\), est\. \$", done.output)
    assert "sess-2" in head_text(tmp_path)
    assert "sess-2" in published(tmp_path)

    again = consolidate(config)
    assert again.exit_code == 0, again.output
    assert "nothing waits to be consolidated: up to date" in again.output


def test_a_failed_run_exits_1_with_its_reason(tmp_path: Path, fake_api: FakeAnthropicAPI) -> None:
    config = config_for(tmp_path, fake_api.base_url)
    extract(tmp_path, config, "sess-1")
    fake_api.responder = failing
    done = consolidate(config)
    assert done.exit_code == 1, done.output
    scope = scope_for(str(tmp_path / "acme"))
    assert re.search(rf"{re.escape(scope)}: failed \(.*the model refused this request", done.output), (
        done.output
    )


def test_without_an_api_key_it_says_so_and_sends_nothing_but_a_dry_run_works(
    tmp_path: Path, fake_api: FakeAnthropicAPI
) -> None:
    config = config_for(tmp_path, fake_api.base_url)
    extract(tmp_path, config, "sess-1")
    refused = consolidate(config, env=NO_KEY)
    assert refused.exit_code == 1, refused.output
    assert "not run: no API key (ANTHROPIC_API_KEY is not set)" in refused.output
    assert "a Claude Pro or Max subscription does not cover the API" in refused.output  # issue 36
    dry = consolidate(config, "--dry-run", env=NO_KEY)
    assert "a typical run: no run measured here yet; docs/costs.md gives measured figures" in dry.output
    assert dry.exit_code == 0, dry.output
    assert "INIT: the first request is" in dry.output
    assert fake_api.message_requests() == []
    assert not (tmp_path / "memory").exists()


def test_an_unknown_scope_is_a_usage_error(tmp_path: Path, fake_api: FakeAnthropicAPI) -> None:
    config = config_for(tmp_path, fake_api.base_url)
    done = consolidate(config, "--dry-run", "no such thing!")
    assert done.exit_code == 64, done.output
    assert "not a scope" in done.output


def test_dry_run_measures_the_request_sent_after_a_one_memory_forget_and_with_a_stale_topic(
    tmp_path: Path, fake_api: FakeAnthropicAPI
) -> None:
    """The prompt names the memories the person forgot and the topics published marked stale: the
    measurement builds the same request the run sends."""
    from pipeline.store import cites

    config = config_for(tmp_path, fake_api.base_url)
    fake_api.responder = agent
    extract(tmp_path, config, "sess-1")
    extract(tmp_path, config, "sess-keep")
    assert consolidate(config).exit_code == 0
    scope = scope_for(str(tmp_path / "acme"))
    base = ["--config", str(config)]
    forgot = CliRunner().invoke(cli, [*base, "memories", "forget", f"{scope}/s-sess-1.md"], env=ENV)
    assert forgot.exit_code == 0, forgot.output

    async def mark(env: Env) -> None:
        stale = {f"{scope}/s-sess-keep.md": {"reason": "Makefile changed (lines 3-4)", "since": "x"}}
        await cites.save(env.store, {}, stale, now=env.clock.now())

    with_store(tmp_path, config, mark)
    extract(tmp_path, config, "sess-2")
    dry = consolidate(config, "--dry-run", "acme")
    assert dry.exit_code == 0, dry.output
    measured = re.search(rf"{re.escape(scope)}: .*the first request is ([\d,]+) bytes", dry.output)
    assert measured, dry.output

    calls = len(fake_api.message_requests())
    done = consolidate(config, "acme")
    assert done.exit_code == 0, done.output
    [sent] = [r.json for r in fake_api.message_requests()[calls : calls + 1]]
    user = sent["messages"][0]["content"][0]["text"]
    assert "forgotten, never write it again" in user
    assert "s-sess-1.md" in user
    assert "Makefile changed (lines 3-4)" in user
    assert _first_request_bytes(sent) == int(measured.group(1).replace(",", ""))

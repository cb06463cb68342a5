"""`memd memories show|pin|unpin|edit|why|forget` on one memory by its id, scopes by key, short name or
folder, each with its project folder (issue 25)."""

from __future__ import annotations

import asyncio
import random
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from daemon.cli import cli
from daemon.exits import Exit
from pipeline.clock import SystemClock
from pipeline.consolidate.run import run_phase2
from pipeline.llm.client import build_client
from pipeline.projects import scope_for
from pipeline.redaction import Redactor
from pipeline.store import open_store
from tests.configs import write_config
from tests.fakes.anthropic_api import FakeAnthropicAPI, ScriptedResponder
from tests.fakes.fixtures import FAKE_API_KEY
from tests.pipeline.consolidate.support import Env, short_topics, topic, write_memory

ENV = {"ANTHROPIC_API_KEY": FAKE_API_KEY, "VISUAL": "", "EDITOR": ""}
NO_KEY = {**ENV, "ANTHROPIC_API_KEY": ""}
DEPLOY_BODY = "Deploy with `fly deploy --remote-only` from the main branch once the tests pass."


def setup(
    tmp_path: Path, api: FakeAnthropicAPI, *, summary: str | None = None, codex: bool = False
) -> tuple[list[str], str]:
    """A consolidated, published project scope (deploy.md, testing.md, the digest ``summary``): the
    CLI's base args and the scope. ``codex``: published to Codex's folder too."""
    (tmp_path / "home" / ".claude" / "projects").mkdir(parents=True)
    (tmp_path / "home" / ".codex" / "sessions").mkdir(parents=True)
    (tmp_path / "acme" / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(tmp_path / "acme")], check=True)  # a folder inside it names it
    config = write_config(
        tmp_path,
        "[sources.claude_code]\n"
        f'root = "{tmp_path / "home" / ".claude" / "projects"}"\n'
        "[sources.codex]\n"
        f'root = "{tmp_path / "home" / ".codex" / "sessions"}"\n'
        f'[llm]\nbase_url = "{api.base_url}"\n'
        f"[publish]\ngemini = false\ncodex = {'true' if codex else 'false'}\n",
    )
    project = str(tmp_path / "acme")

    async def go() -> None:
        from daemon.config import load_settings
        from pipeline.machine import machine_id

        settings = load_settings(config).settings
        store = await open_store(settings.paths.state_db, machine=machine_id(settings.paths.state_dir))
        clock = SystemClock()
        llm = build_client(settings, store=store, clock=clock, env=ENV, rng=random.Random(1))
        try:
            env = Env(tmp_path, store, clock, api, settings, llm, Redactor(b"cli-test-key-0123456789"))
            await env.add_extract("sess-1", project=project)
            scripted = write_memory(short_topics(DEPLOY_BODY), **({"summary": summary} if summary else {}))
            api.responder = ScriptedResponder(scripted)
            report = await run_phase2(store, settings, env.repo, clock, llm, env.redactor)
            assert [s.outcome for s in report.scopes] == ["committed"], report.scopes
        finally:
            await llm.aclose()
            await store.close()

    asyncio.run(go())
    base = ["--config", str(config)]
    assert CliRunner().invoke(cli, [*base, "publish"], env=ENV).exit_code == 0
    return base, scope_for(project)


def published(tmp_path: Path) -> str:
    root = tmp_path / "home" / ".claude" / "projects"
    return "".join(p.read_text() for p in sorted(root.glob("*/memory/*.md")))


def test_show_gives_ids_and_folders_and_takes_a_key_a_short_name_or_a_folder(
    tmp_path: Path, fake_api: FakeAnthropicAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, scope = setup(tmp_path, fake_api)
    runner = CliRunner()
    listed = runner.invoke(cli, [*base, "memories", "show"], env=ENV)
    assert listed.exit_code == 0, listed.output
    [line] = [ln for ln in listed.output.splitlines() if ln.startswith(scope)]
    assert str(tmp_path / "acme") in line

    monkeypatch.chdir(tmp_path / "acme")
    for how in (scope, scope.removeprefix("projects/"), "acme", str(tmp_path / "acme"), ".", "src", "./src"):
        shown = runner.invoke(cli, [*base, "memories", "show", how], env=ENV)
        assert shown.exit_code == 0, (how, shown.output)
        assert f"{scope}/deploy.md" in shown.output, how
        assert f"{scope}/testing.md" in shown.output
        assert str(tmp_path / "acme") in shown.output.splitlines()[0]

    one = runner.invoke(cli, [*base, "memories", "show", f"{scope}/deploy.md"], env=ENV)
    assert one.exit_code == 0, one.output
    assert DEPLOY_BODY in one.output
    assert runner.invoke(cli, [*base, "memories", "show", "acme/deploy.md"], env=ENV).output == one.output
    missing = runner.invoke(cli, [*base, "memories", "show", f"{scope}/nothing.md"], env=ENV)
    assert missing.exit_code == Exit.FAILED
    assert "no memory" in missing.output
    log = runner.invoke(cli, [*base, "memories", "log", "acme"], env=ENV)
    assert log.exit_code == 0
    assert "memd: consolidate" in log.output


def test_show_takes_a_path_inside_the_memory_repository(
    tmp_path: Path, fake_api: FakeAnthropicAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    # issue 36: a memory file's path (as `memd memories show SCOPE` or a file manager gives it) named a
    # made-up scope, that of the memory repository's own folder ("no scope projects/memory-...")
    base, scope = setup(tmp_path, fake_api)
    runner = CliRunner()
    from daemon.config import load_settings

    repo = load_settings(Path(base[1])).settings.paths.memory_dir
    one = runner.invoke(cli, [*base, "memories", "show", str(repo / scope / "deploy.md")], env=ENV)
    assert one.exit_code == 0, one.output
    assert DEPLOY_BODY in one.output
    whole = runner.invoke(cli, [*base, "memories", "show", str(repo / scope)], env=ENV)
    assert whole.exit_code == 0, whole.output
    assert f"{scope}/deploy.md" in whole.output
    monkeypatch.chdir(repo / scope)
    here = runner.invoke(cli, [*base, "memories", "show", "./testing.md"], env=ENV)
    assert here.exit_code == 0, here.output
    assert "testing" in here.output.lower()
    log = runner.invoke(cli, [*base, "memories", "log", str(repo / scope)], env=ENV)
    assert log.exit_code == 0, log.output
    assert "memd: consolidate" in log.output
    outside = runner.invoke(cli, [*base, "memories", "show", str(repo / scope / "nothing.md")], env=ENV)
    assert outside.exit_code == Exit.FAILED
    assert "no memory" in outside.output
    assert "projects/memory-" not in outside.output


def test_pin_edit_why_and_forget_one_memory(tmp_path: Path, fake_api: FakeAnthropicAPI) -> None:
    base, scope = setup(tmp_path, fake_api)
    runner = CliRunner()
    deploy, testing = f"{scope}/deploy.md", f"{scope}/testing.md"

    pinned = runner.invoke(cli, [*base, "memories", "pin", testing], env=ENV)
    assert pinned.exit_code == 0, pinned.output
    assert f"{testing}: pinned" in pinned.output
    assert "pinned" in runner.invoke(cli, [*base, "memories", "show", scope], env=ENV).output
    assert "already pinned" in runner.invoke(cli, [*base, "memories", "pin", testing], env=ENV).output

    body = runner.invoke(
        cli, [*base, "memories", "edit", deploy, "--set-body", "Deploy on Fridays."], env=ENV
    )
    assert body.exit_code == 0, body.output
    assert "Deploy on Fridays." in published(tmp_path)
    assert "fly deploy" not in published(tmp_path)
    assert "memory_summary.md, the digest written from every topic, is a placeholder" in body.output
    dry = runner.invoke(cli, [*base, "consolidate", "--dry-run"], env=ENV)
    assert "up to date" not in dry.output, dry.output  # the digest is stale: a run rebuilds it
    assert f"{scope}: " in dry.output
    source = tmp_path / "new.md"
    source.write_text("Deploy on Mondays.\n")
    from_file = runner.invoke(cli, [*base, "memories", "edit", deploy, "--from", str(source)], env=ENV)
    assert from_file.exit_code == 0, from_file.output
    editor = runner.invoke(
        cli, [*base, "memories", "edit", deploy], env={**ENV, "VISUAL": "sed -i s/Mondays/Tuesdays/"}
    )
    assert editor.exit_code == 0, editor.output
    assert "Deploy on Tuesdays." in runner.invoke(cli, [*base, "memories", "show", deploy], env=ENV).output
    no_editor = runner.invoke(cli, [*base, "memories", "edit", deploy], env=ENV)
    assert no_editor.exit_code == Exit.USAGE
    both = runner.invoke(
        cli, [*base, "memories", "edit", deploy, "--set-body", "x", "--from", str(source)], env=ENV
    )
    assert both.exit_code == Exit.USAGE

    why = runner.invoke(cli, [*base, "memories", "why", deploy], env=ENV)
    assert why.exit_code == 0, why.output
    assert "sess-1: claude_code" in why.output
    assert str(tmp_path / "acme") in why.output
    assert "edited by the person" in why.output
    assert "[run " in why.output  # the consolidation that wrote it
    assert f"memd: {deploy} edited by the person (by " in why.output  # the person's commit, theirs
    assert "(by memd)  [run " in why.output
    assert "edited by the person on " in why.output
    assert "pinned" in runner.invoke(cli, [*base, "memories", "why", testing], env=ENV).output

    forgot = runner.invoke(cli, [*base, "memories", "forget", deploy], env=ENV)
    assert forgot.exit_code == 0, forgot.output
    assert "stays forgotten" in forgot.output
    assert "Deploy on" not in published(tmp_path)
    assert "Run `make test`" in published(tmp_path)
    assert runner.invoke(cli, [*base, "memories", "show", deploy], env=ENV).exit_code == Exit.FAILED
    again = runner.invoke(cli, [*base, "memories", "forget", deploy], env=ENV)
    assert again.exit_code == Exit.FAILED
    assert "no memory" in again.output
    assert runner.invoke(cli, [*base, "memories", "why", "nope"], env=ENV).exit_code == Exit.FAILED
    unpinned = runner.invoke(cli, [*base, "memories", "unpin", testing], env=ENV)
    assert unpinned.exit_code == 0, unpinned.output


@pytest.mark.parametrize("how", ["acme", "src"])
def test_forget_project_takes_the_keys_short_name_or_a_bare_folder_name(
    tmp_path: Path, fake_api: FakeAnthropicAPI, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """``acme`` is the key's short name (no folder of that name where it runs); ``src`` is a folder
    inside the project, named as ``./src`` would be."""
    base, scope = setup(tmp_path, fake_api)
    assert "fly deploy" in published(tmp_path)
    monkeypatch.chdir(tmp_path / "acme")
    forgot = CliRunner().invoke(cli, [*base, "forget", "--project", how], env=ENV)
    assert forgot.exit_code == 0, forgot.output
    assert f"{scope}: 1 extract(s) forgotten" in forgot.output
    assert "fly deploy" not in published(tmp_path)


def test_forget_one_memory_whose_copy_cannot_be_written_says_not_finished(
    tmp_path: Path, fake_api: FakeAnthropicAPI
) -> None:
    base, scope = setup(tmp_path, fake_api)
    [index] = list((tmp_path / "home" / ".claude" / "projects").glob("*acme/memory/MEMORY.md"))
    elsewhere = tmp_path / "elsewhere.md"
    elsewhere.write_text(index.read_text())
    index.unlink()
    index.symlink_to(elsewhere)  # memd writes no file through a link it did not make
    forgot = CliRunner().invoke(cli, [*base, "memories", "forget", f"{scope}/deploy.md"], env=ENV)
    assert forgot.exit_code == Exit.FAILED, forgot.output
    assert "fly deploy" in published(tmp_path)
    assert (
        f"NOT finished: the published copy at {index.parent} still holds {scope}/deploy.md" in forgot.output
    )
    assert "`memd publish` writes it again" in forgot.output
    assert "stays forgotten" not in forgot.output
    assert f"{scope}/deploy.md: forgotten (" not in forgot.output


def head_files(tmp_path: Path) -> dict[str, str]:
    """Every file on the memory repository's head (its tombstones aside), by path."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=tmp_path / "memory", capture_output=True, text=True, check=True
        ).stdout

    names = git("ls-tree", "-r", "--name-only", "HEAD").split()
    return {n: git("show", f"HEAD:{n}") for n in names if not n.startswith("tombstones/")}


def every_copy(tmp_path: Path) -> dict[str, str]:
    """Every file memd published under the test's home: Claude Code's project folders, Codex's folder."""
    return {str(p): p.read_text() for p in sorted((tmp_path / "home").rglob("*.md"))}


def test_forget_one_memory_without_an_api_key_takes_it_out_of_the_digest_and_every_copy(
    tmp_path: Path, fake_api: FakeAnthropicAPI
) -> None:
    """The digest (memory_summary.md, written from every topic) repeats the topic's text: the forget
    replaces it by the placeholder on the head and in every published copy at once, with no model
    call, and the next run with a model writes it again without the forgotten memory."""
    from pipeline.layout import PLACEHOLDERS

    marker = "fly deploy --remote-only"
    base, scope = setup(tmp_path, fake_api, summary=f"# Summary\n\nAcme deploys: {DEPLOY_BODY}\n", codex=True)
    codex_summary = tmp_path / "home" / ".codex" / "memories" / "memory_summary.md"
    digest = f"{scope}/memory_summary.md"
    assert marker in head_files(tmp_path)[digest]
    assert marker in codex_summary.read_text()
    claude = [p for p, text in every_copy(tmp_path).items() if "/.claude/" in p and marker in text]
    assert claude, "Claude Code's copy carries the topic"
    calls = len(fake_api.message_requests())

    forgot = CliRunner().invoke(cli, [*base, "memories", "forget", f"{scope}/deploy.md"], env=NO_KEY)
    assert forgot.exit_code == 0, forgot.output
    assert len(fake_api.message_requests()) == calls
    assert {p: t for p, t in head_files(tmp_path).items() if marker in t} == {}
    assert head_files(tmp_path)[digest].encode() in PLACEHOLDERS
    assert {p: t for p, t in every_copy(tmp_path).items() if marker in t} == {}
    assert "is rebuilding this digest" in codex_summary.read_text()
    assert "Run `make test`" in "".join(every_copy(tmp_path).values())  # the rest stays published
    assert (
        f"{scope}/memory_summary.md, the digest written from every topic, is a placeholder" in forgot.output
    )
    assert "rebuilds it without this memory" in forgot.output

    rebuilt = "# Summary\n\nAcme runs its tests with make test.\n"
    fake_api.responder = ScriptedResponder(
        write_memory({"testing.md": topic("Testing", "Run `make test`.")}, summary=rebuilt)
    )
    later = CliRunner().invoke(cli, [*base, "consolidate"], env=ENV)
    assert later.exit_code == 0, later.output
    assert f"{scope}: committed" in later.output
    assert len(fake_api.message_requests()) > calls
    assert head_files(tmp_path)[digest] == rebuilt
    assert "Acme runs its tests with make test." in codex_summary.read_text()
    assert {p: t for p, t in head_files(tmp_path).items() if marker in t} == {}
    assert {p: t for p, t in every_copy(tmp_path).items() if marker in t} == {}
    assert "is rebuilding this digest" not in "".join(every_copy(tmp_path).values())


def test_forget_one_memory_takes_its_text_out_of_the_history_of_a_repository_never_synced(
    tmp_path: Path, fake_api: FakeAnthropicAPI
) -> None:
    """Issue 32: `memd memories forget` leaves no commit of memd's refs, and no object of the
    store, holding the forgotten text (the repository has never synced: its history is its own)."""
    marker = "fly deploy --remote-only"
    base, scope = setup(tmp_path, fake_api)
    memory = tmp_path / "memory"

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=memory, capture_output=True, text=True, check=True).stdout

    assert marker in git("log", "-p", "--all")
    forgot = CliRunner().invoke(cli, [*base, "memories", "forget", f"{scope}/deploy.md"], env=NO_KEY)
    assert forgot.exit_code == 0, forgot.output
    assert "its text is gone from the memory repository's history too" in forgot.output
    assert marker not in git("log", "-p", "--all")
    assert git("reflog", "--all") == ""
    objects = git("cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype)")
    blobs = [line.split()[0] for line in objects.splitlines() if line.endswith(" blob")]
    assert not [b for b in blobs if marker in git("cat-file", "blob", b)]
    assert "Run `make test`" in git("show", f"HEAD:{scope}/testing.md")  # the rest stays

"""Aider: the global scope in ~/.aider/memd/memd-memory.md, named in the read: list of ~/.aider.conf.yml
(edited line by line, every other byte kept), on by default, skipped without Aider."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipeline.agents.aider import MEMORY_FILE
from pipeline.agents.aider import publish as aider_publish
from pipeline.agents.aider.conf import MARK, ReadListError, add_entry, read_entries, remove_entry
from pipeline.clock import FakeClock
from pipeline.publish.plan import Homes
from pipeline.publish.run import publish_all
from pipeline.publish.sentinel import BEGIN
from pipeline.publish.targets import registry
from pipeline.settings import PublishSettings
from pipeline.store import Store
from tests.conftest import sqlite_only
from tests.pipeline.publish.support import Env, add_scope, topic_text, write_scope

USER_CONF = (
    "# my aider settings\nmodel: sonnet   # the usual\nread:\n    - ~/CONVENTIONS.md\n\nauto-commits: false\n"
)


def test_memds_entry_joins_a_block_list_and_leaves_byte_for_byte() -> None:
    added = add_entry(USER_CONF, "/h/.aider/memd-memory.md")
    assert added == USER_CONF.replace(
        "    - ~/CONVENTIONS.md\n", f'    - ~/CONVENTIONS.md\n    - "/h/.aider/memd-memory.md"  {MARK}\n'
    )
    assert add_entry(added, "/h/.aider/memd-memory.md") == added  # once
    assert read_entries(added) == ["~/CONVENTIONS.md", "/h/.aider/memd-memory.md"]
    assert remove_entry(added, "/h/.aider/memd-memory.md") == USER_CONF


@pytest.mark.parametrize("before", ["", "model: sonnet\n", "model: sonnet", "a: 1\r\nb: 2\r\n"])
def test_a_file_without_read_gets_the_key_and_loses_it_again(before: str) -> None:
    added = add_entry(before, "/h/m.md")
    assert added.startswith(before)
    assert read_entries(added) == ["/h/m.md"]
    expected = before if before.endswith(("\n", "\r\n")) or not before else before + "\n"
    assert remove_entry(added, "/h/m.md") == expected


@pytest.mark.parametrize(
    "conf", ["read: CONVENTIONS.md\n", "read: [a.md, b.md]\n", "read:\n  - a\nread:\n  - b\n"]
)
def test_a_read_memd_cannot_edit_safely_is_refused(conf: str) -> None:
    with pytest.raises(ReadListError):
        add_entry(conf, "/h/m.md")


@pytest.fixture(autouse=True)
def _home(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(env.home))  # Aider's files are under the user's home itself


def _aider_home(env: Env) -> None:
    (env.home / ".aider").mkdir()


@sqlite_only
async def test_on_by_default_it_writes_memds_file_and_its_read_entry_and_withdraws_both(
    env: Env, store: Store, clock: FakeClock
) -> None:
    write_scope(
        env.memory_dir, "global", summary="Prefers pnpm.", topics={"me.md": topic_text("Me", type_="user")}
    )
    _aider_home(env)
    conf = env.home / ".aider.conf.yml"
    conf.write_text(USER_CONF)
    base = env.settings(claude_code=False, gemini=False)
    on = base.model_copy(
        update={"publish": PublishSettings(qwen_code=False, openhands_global=False, cline_global=False)}
    )  # the defaults
    (result,) = (await publish_all(store, on, clock)).results
    assert (result.target, result.scope, result.outcome) == ("aider_global", "global", "published")
    memory = env.home / ".aider" / "memd" / MEMORY_FILE
    assert BEGIN in memory.read_text()
    assert "Prefers pnpm." in memory.read_text()
    assert read_entries(conf.read_text()) == ["~/CONVENTIONS.md", str(memory)]

    (again,) = (await publish_all(store, on, clock)).results
    assert again.outcome == "unchanged"

    (gone,) = (await publish_all(store, base, clock)).results  # aider_global = false
    assert (gone.target, gone.outcome) == ("aider_global", "withdrawn")
    assert conf.read_text() == USER_CONF
    assert not memory.exists()


@sqlite_only
async def test_without_aider_it_is_skipped_and_nothing_is_written(
    env: Env, store: Store, clock: FakeClock
) -> None:
    write_scope(env.memory_dir, "global", summary="Prefers pnpm.")
    on = env.settings(claude_code=False, gemini=False, aider_global=True)
    (result,) = (await publish_all(store, on, clock)).results
    assert result.outcome == "skipped"
    assert "Aider is not set up" in (result.reason or "")
    assert not (env.home / ".aider.conf.yml").exists()


@sqlite_only
async def test_a_one_line_read_is_refused_and_left_alone(env: Env, store: Store, clock: FakeClock) -> None:
    write_scope(env.memory_dir, "global", summary="Prefers pnpm.")
    _aider_home(env)
    conf = env.home / ".aider.conf.yml"
    conf.write_text("read: [CONVENTIONS.md]\n")
    on = env.settings(claude_code=False, gemini=False, aider_global=True)
    (result,) = (await publish_all(store, on, clock)).results
    assert result.outcome == "refused"
    assert "one line" in (result.reason or "")
    assert conf.read_text() == "read: [CONVENTIONS.md]\n"
    assert not (env.home / ".aider" / "memd" / MEMORY_FILE).exists()


@sqlite_only
async def test_a_dotfiles_link_is_followed_and_a_repos_own_read_list_is_reported(
    env: Env, store: Store, clock: FakeClock
) -> None:
    write_scope(env.memory_dir, "global", summary="Prefers pnpm.")
    project = env.project("shop")
    scope = await add_scope(store, str(project), clock.now())
    write_scope(env.memory_dir, scope, summary="Uses pnpm.")
    (project / ".aider.conf.yml").write_text("read:\n  - CONVENTIONS.md\n")
    _aider_home(env)
    dotfiles = env.tmp / "dotfiles" / "aider.conf.yml"
    dotfiles.parent.mkdir()
    dotfiles.write_text("model: sonnet\n")
    (env.home / ".aider.conf.yml").symlink_to(dotfiles)
    on = env.settings(claude_code=False, gemini=False, aider_global=True)
    (result,) = [r for r in (await publish_all(store, on, clock)).results if r.target == "aider_global"]
    assert result.outcome == "published", result.reason
    assert os.path.islink(env.home / ".aider.conf.yml")
    assert read_entries(dotfiles.read_text()) == [str(env.home / ".aider" / "memd" / MEMORY_FILE)]
    assert str(project) in (result.reason or "")
    assert "own read: list" in (result.reason or "")


@sqlite_only
async def test_a_fifo_config_fails_promptly_with_its_name(env: Env, store: Store, clock: FakeClock) -> None:
    write_scope(env.memory_dir, "global", summary="Prefers pnpm.")
    _aider_home(env)
    os.mkfifo(env.home / ".aider.conf.yml")
    on = env.settings(claude_code=False, gemini=False, aider_global=True)
    (result,) = (await publish_all(store, on, clock)).results
    assert result.outcome == "failed"
    assert ".aider.conf.yml" in (result.reason or "")


@sqlite_only
async def test_where_the_home_folder_is_read_only_memds_file_is_written_and_the_entry_asked_for(
    env: Env, store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The service's sandbox opens ~/.aider/memd, never the home folder that holds ~/.aider.conf.yml.
    write_scope(env.memory_dir, "global", summary="Prefers pnpm.")
    _aider_home(env)
    real_access = os.access
    monkeypatch.setattr(
        aider_publish.os, "access", lambda p, m: False if Path(p) == env.home else real_access(p, m)
    )
    on = env.settings(claude_code=False, gemini=False, aider_global=True)
    (result,) = (await publish_all(store, on, clock)).results
    assert result.outcome == "skipped"
    assert "memd publish" in (result.reason or "")
    assert (env.home / ".aider" / "memd" / MEMORY_FILE).is_file()
    assert not (env.home / ".aider.conf.yml").exists()

    monkeypatch.setattr(aider_publish.os, "access", real_access)  # `memd publish`, outside the sandbox
    (result,) = (await publish_all(store, on, clock)).results
    assert result.outcome == "published"
    assert read_entries((env.home / ".aider.conf.yml").read_text()) == [
        str(env.home / ".aider" / "memd" / MEMORY_FILE)
    ]


def test_the_sandbox_opens_memds_folder_in_aiders_never_the_home_folder(env: Env) -> None:
    homes = Homes(user=env.home, sources=env.settings().sources)
    on = env.settings(aider_global=True).publish
    folders = registry.written_folders(homes, on)
    assert env.home / ".aider" / "memd" in folders
    assert env.home not in folders
    assert env.home / ".aider" not in folders


@sqlite_only
async def test_a_projects_memory_goes_in_its_own_file_named_by_the_repositorys_conf_when_turned_on(
    env: Env, store: Store, clock: FakeClock
) -> None:
    """``aider_project`` (off by default: it edits a file of the user's repository): the project's
    memory in ``<root>/.aider.memd-memory.md`` (``.aider*``, which Aider itself has git ignore),
    named with memd's global file in the read: list of the root's ``.aider.conf.yml`` (Aider loads
    one read: list, that file's when it has one, so HOME's entry would be hidden there)."""
    write_scope(env.memory_dir, "global", summary="Prefers pnpm.")
    project = env.project("shop")
    scope = await add_scope(store, str(project), clock.now())
    write_scope(env.memory_dir, scope, summary="The shop deploys with make ship.")
    _aider_home(env)
    conf = project / ".aider.conf.yml"
    conf.write_text(USER_CONF)
    assert PublishSettings().on("aider_project") is False  # off by default
    base = env.settings(claude_code=False, gemini=False, aider_global=True)
    on = env.settings(claude_code=False, gemini=False, aider_global=True, aider_project=True)
    results = {(r.target, r.scope): r for r in (await publish_all(store, on, clock)).results}
    assert results[("aider_project", scope)].outcome == "published", results[("aider_project", scope)].reason
    memory = project / aider_publish.PROJECT_FILE
    assert BEGIN in memory.read_text()
    assert "The shop deploys with make ship." in memory.read_text()
    global_file = env.home / ".aider" / "memd" / MEMORY_FILE
    assert read_entries(conf.read_text()) == ["~/CONVENTIONS.md", str(memory), str(global_file)]
    assert conf.read_text().startswith(USER_CONF.split("read:")[0])

    again = {(r.target, r.scope): r for r in (await publish_all(store, on, clock)).results}
    assert again[("aider_project", scope)].outcome == "unchanged"
    assert aider_publish.shadowing([str(project)], global_file) == []  # its list names memd's file now

    gone = {(r.target, r.scope): r.outcome for r in (await publish_all(store, base, clock)).results}
    assert gone[("aider_project", scope)] == "withdrawn"
    assert conf.read_text() == USER_CONF  # byte for byte
    assert not memory.exists()
    assert aider_publish.shadowing([str(project)], global_file) == [str(project)]  # hidden again


@sqlite_only
async def test_a_project_without_a_conf_gets_one_memd_takes_back_and_a_link_is_not_followed(
    env: Env, store: Store, clock: FakeClock
) -> None:
    project = env.project("shop")
    scope = await add_scope(store, str(project), clock.now())
    write_scope(env.memory_dir, scope, summary="The shop deploys with make ship.")
    _aider_home(env)
    on = env.settings(claude_code=False, gemini=False, aider_global=False, aider_project=True)
    (result,) = [r for r in (await publish_all(store, on, clock)).results if r.target == "aider_project"]
    assert result.outcome == "published", result.reason
    conf = project / ".aider.conf.yml"
    assert read_entries(conf.read_text()) == [str(project / aider_publish.PROJECT_FILE)]
    off = env.settings(claude_code=False, gemini=False, aider_global=False)
    await publish_all(store, off, clock)
    assert not conf.exists()  # memd made it, memd takes it back
    assert not (project / aider_publish.PROJECT_FILE).exists()

    elsewhere = env.tmp / "elsewhere.yml"
    elsewhere.write_text("model: sonnet\n")
    conf.symlink_to(elsewhere)  # a link in the repository: not written through
    (result,) = [r for r in (await publish_all(store, on, clock)).results if r.target == "aider_project"]
    assert result.outcome in ("failed", "refused"), result
    assert elsewhere.read_text() == "model: sonnet\n"
    assert not (project / aider_publish.PROJECT_FILE).exists()

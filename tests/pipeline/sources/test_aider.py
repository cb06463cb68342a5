"""Aider's chat history: sessions split at their headers, turns told apart, the bounded search, and
hostile files refused with a reason (fixtures written here, shaped like Aider 0.86.2's)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipeline.agents import aider
from pipeline.agents.aider.transcripts import AiderAdapter, headless
from pipeline.sources import registry
from pipeline.store import Store
from pipeline.transcript import AssistantText, ToolCall, ToolResult, UserMessage

HEADLESS = """
# aider chat started at 2026-12-07 14:15:51

> Detected dumb terminal, disabling fancy input and pretty output.
> /opt/venv/bin/aider --model openai/stub-model --message Remember we use pnpm (TAG_ONE). The token is ghp_FAKEFAKE --yes-always app.py
> Aider v0.86.2
> Model: openai/stub-model with whole edit format
> Git repo: ../.git with 3 files
> Added src/app.py to the chat.
> Cur working dir: {repo}/src
> Git working dir: {repo}

#### Remember we use pnpm (TAG_ONE). The token is ghp_FAKEFAKE

I'll note the package manager.

src/app.py
```python
# package manager: pnpm
```

> Tokens: 769 sent, 45 received.
> Applied edit to src/app.py
> Commit 490a7ec Note the package manager
"""

INTERACTIVE = """
# aider chat started at 2026-12-07 14:16:00

> /opt/venv/bin/aider --model openai/stub-model
> Aider v0.86.2
> Added ../.aider/memd/memd-memory.md to the chat (read-only).

#### /add notes.txt
> Added notes.txt to the chat

#### Which package manager?
#### Say it in one word.

pnpm

> Tokens: 820 sent, 8 received.

#### /run curl -s https://example.com/docs
> Add 0.1k tokens of command output to the chat? (Y)es/(N)o [Yes]: y
> Added 3 lines of output to the chat.

#### /web https://example.org/page
> Scraping https://example.org/page...

#### /ask what does the page say?

It says hello.
"""


def aider_lines(text: str) -> str:
    """Aider ends its ``####`` and ``>`` lines with two spaces (a Markdown line break)."""
    return "\n".join(f"{line}  " if line.startswith(("#### ", "> ")) else line for line in text.split("\n"))


def write_history(repo: Path, *sessions: str) -> Path:
    repo.mkdir(parents=True, exist_ok=True)
    path = repo / aider.HISTORY_FILE
    path.write_text("".join(aider_lines(s.replace("{repo}", str(repo))) for s in sessions))
    return path


def sessions(root: Path) -> list[tuple[str, tuple[int, int, int, int] | None, str | None]]:
    return aider.walk(root)


def parse(path: str, **kw: object) -> object:
    return AiderAdapter().parse(Path(path), **kw)  # type: ignore[arg-type]


def test_each_header_starts_a_session_named_by_file_and_offset(tmp_path: Path) -> None:
    history = write_history(tmp_path / "code" / "repo", HEADLESS, INTERACTIVE)
    walked = sessions(tmp_path)
    second = history.read_bytes().index(b"# aider chat started at 2026-12-07 14:16:00")
    assert [p for p, _k, _w in walked] == [f"{history}#1", f"{history}#{second}"]
    assert [k[2] for _p, k, _w in walked if k] == [second - 1, history.stat().st_size - second]
    assert list(aider.discover(tmp_path)) == [p for p, _k, _w in walked]


def test_a_headless_session_keeps_the_user_turn_and_quotes_aiders_output(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    history = write_history(repo, HEADLESS, INTERACTIVE)
    path, key, _ = sessions(tmp_path)[0]
    result = AiderAdapter().parse(Path(path), max_bytes=key[2] if key else None)
    assert result.ok, result.problem
    t = result.transcript
    assert t is not None
    assert t.non_interactive
    assert t.user_message_count == 1
    assert t.cwd == str(repo)
    assert t.agent_version == "0.86.2"
    users = [i.text for i in t.items if isinstance(i, UserMessage)]
    assert users == ["Remember we use pnpm (TAG_ONE). The token is ghp_FAKEFAKE"]
    said = [i.text for i in t.items if isinstance(i, AssistantText)]
    assert said
    assert said[0].startswith("I'll note the package manager.")
    assert "# package manager: pnpm" in said[0]
    outputs = [i.text for i in t.items if isinstance(i, ToolResult)]
    assert any("Applied edit to src/app.py" in o for o in outputs)
    # the echoed command line (the prompt a second time, secret and all) is not kept
    assert not any("ghp_FAKEFAKE" in o or "--message" in o for o in outputs)
    assert "TAG_ONE" not in "".join(outputs)
    assert t.started_at is not None
    assert t.started_at.strftime("%H:%M:%S") == "14:15:51"
    # closed by the next header: its time is the last activity
    assert t.last_activity is not None
    assert t.last_activity.strftime("%H:%M:%S") == "14:16:00"
    assert t.session_id.startswith("aider-")
    again = AiderAdapter().parse(Path(path), max_bytes=key[2] if key else None)
    assert again.transcript is not None
    assert again.transcript.session_id == t.session_id
    assert history.exists()


def test_an_interactive_session_tells_commands_prompts_and_fetches_apart(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    history = write_history(repo, HEADLESS, INTERACTIVE)
    path, key, _ = sessions(tmp_path)[1]
    t = AiderAdapter().parse(Path(path)).transcript  # no size given: to the end of the session
    assert t is not None
    assert not t.non_interactive
    users = [i.text for i in t.items if isinstance(i, UserMessage)]
    assert users == ["Which package manager?\nSay it in one word.", "what does the page say?"]
    calls = [(i.name, i.essential_arg) for i in t.items if isinstance(i, ToolCall)]
    assert ("add", "notes.txt") in calls
    assert ("run", "curl -s https://example.com/docs") in calls
    assert any(name == "web" for name, _ in calls)
    assert "web_fetch" in t.external_context
    assert any(tag.startswith("web") or "example.com" in tag for tag in t.external_context)
    results = [i for i in t.items if isinstance(i, ToolResult)]
    assert any("Added 3 lines of output" in r.text for r in results)
    # the last session is live: its last activity is the file's modification time
    assert t.last_activity is not None
    assert abs(t.last_activity.timestamp() - history.stat().st_mtime) < 1
    # memd's published file loaded through read: is a memory read
    assert [r.via for r in t.memory_reads] == ["injected"]
    assert t.memory_reads[0].path.endswith(aider.MEMORY_FILE)
    assert key is not None
    assert key[3] == history.stat().st_mtime_ns


def test_appending_moves_only_the_last_session_and_adds_one(tmp_path: Path) -> None:
    history = write_history(tmp_path / "repo", HEADLESS)
    (first,) = sessions(tmp_path)
    with history.open("a") as f:
        f.write("\n#### a later line  \n")
    (grown,) = sessions(tmp_path)
    assert grown[0] == first[0]
    assert grown[1] != first[1]
    with history.open("a") as f:
        f.write(INTERACTIVE)
    closed, live = sessions(tmp_path)
    assert closed[0] == first[0]
    assert closed[1] is not None
    assert closed[1][3] == 0
    t = AiderAdapter().parse(Path(closed[0]), max_bytes=closed[1][2]).transcript
    assert t is not None
    assert t.user_message_count == 2
    assert live[0].endswith(f"#{closed[1][2] + 1}")


def test_a_torn_last_line_waits_for_its_end(tmp_path: Path) -> None:
    history = write_history(tmp_path / "repo", HEADLESS)
    with history.open("a") as f:
        f.write("#### half a line")
    ((path, key, _),) = sessions(tmp_path)
    assert key is not None
    result = AiderAdapter().parse(Path(path), max_bytes=key[2])
    assert result.ok
    assert result.transcript is not None
    assert result.new_offset == key[2] - len("#### half a line")
    assert result.transcript.user_message_count == 1


def test_a_rewritten_file_is_refused_with_a_reason(tmp_path: Path) -> None:
    history = write_history(tmp_path / "repo", HEADLESS, INTERACTIVE)
    (_, _), (path, key, _) = [(p, k) for p, k, _w in sessions(tmp_path)][0], sessions(tmp_path)[1]
    history.write_text("something else entirely\n" * 200)
    result = AiderAdapter().parse(Path(path), max_bytes=key[2] if key else None)
    assert not result.ok
    assert result.problem is not None
    assert "rewritten" in str(result.problem)


@pytest.mark.parametrize("kind", ["symlink", "fifo", "binary", "huge"])
def test_hostile_history_files_are_refused_with_a_reason(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    target = repo / aider.HISTORY_FILE
    if kind == "symlink":
        real = write_history(tmp_path / "elsewhere", HEADLESS)
        target.symlink_to(real)
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "binary":
        target.write_bytes(b"# aider chat started at 2026-12-07 14:15:51\n\0\0\0\n")
    else:
        write_history(repo, HEADLESS)
        monkeypatch.setattr(aider, "FILE_MAX_BYTES", 100)
    walked = [w for w in sessions(tmp_path) if w[0].startswith(str(target))]
    assert len(walked) == 1
    path, key, why = walked[0]
    assert key is None
    assert why
    expected = {
        "symlink": "symbolic link",
        "fifo": "not a regular file",
        "binary": "binary",
        "huge": "larger",
    }
    assert expected[kind] in why
    if kind in ("symlink", "fifo"):
        result = AiderAdapter().parse(Path(f"{target}#1"))
        assert not result.ok
        assert result.problem is not None


def test_the_search_is_bounded_and_skips_hidden_trees_links_and_depth(tmp_path: Path) -> None:
    write_history(tmp_path / "a" / "repo", HEADLESS)
    write_history(tmp_path / "node_modules" / "pkg", HEADLESS)
    write_history(tmp_path / ".hidden" / "repo", HEADLESS)
    deep = tmp_path.joinpath(*["d"] * (aider.SEARCH_MAX_DEPTH + 1))
    write_history(deep, HEADLESS)
    (tmp_path / "link").symlink_to(tmp_path / "a")
    found = list(aider.history_files(tmp_path))
    assert found == [str(tmp_path / "a" / "repo" / aider.HISTORY_FILE)]


def test_the_search_stops_at_its_folder_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for n in range(5):
        write_history(tmp_path / f"p{n}", HEADLESS)
    monkeypatch.setattr(aider, "SEARCH_MAX_DIRS", 3)  # the root and two projects
    assert len(list(aider.history_files(tmp_path))) == 2


def test_the_history_file_aider_is_told_to_use_is_read_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    moved = write_history(tmp_path / "logs", HEADLESS).rename(tmp_path / "logs" / "chat.md")
    monkeypatch.setenv(aider.HISTORY_ENV, str(moved))
    assert list(aider.history_files(tmp_path / "empty")) == [str(moved)]


def test_the_echoed_command_line_tells_headless_runs() -> None:
    assert headless("/x/bin/aider --model m --message hi there --yes-always")
    assert headless("aider -m hi")
    assert headless("aider --message-file task.md")
    assert headless("aider --message=hi")
    assert not headless("/x/bin/aider --model openai/stub-model --no-check-update")


def test_the_daemon_never_watches_the_home_folder_aider_is_searched_in(tmp_path: Path) -> None:
    from daemon.service.lifecycle import watched_roots
    from pipeline.settings import Settings

    roots = {name: {"root": str(tmp_path / name)} for name in registry.names()}
    settings = Settings.model_validate(
        {
            "paths": {
                "memory_dir": str(tmp_path / "m"),
                "state_db": "sqlite:///x",
                "state_dir": str(tmp_path / "s"),
            },
            "sources": roots,
        }
    )
    watched = watched_roots(settings)
    assert tmp_path / "aider" not in watched
    assert tmp_path / "claude_code" in watched  # the other agents' roots are still watched
    assert settings.sources.enabled()["aider"].root == tmp_path / "aider"  # but Aider is still read


MULTILINE = """
# aider chat started at 2026-12-07 15:00:00

> /opt/venv/bin/aider --model m --message first line of the prompt
second line with ghp_SECRETSECRET
third line --yes-always
> Aider v0.86.2

#### first line of the prompt
#### second line with ghp_SECRETSECRET
#### third line

The reply.

> litellm.APIError: the model failed
its second line
"""


def test_aiders_multi_line_output_stays_aiders_and_a_multi_line_prompt_leaves_the_command_line(
    tmp_path: Path,
) -> None:
    # Aider writes "> " before the first line of its own messages only (io.append_chat_history).
    write_history(tmp_path / "repo", MULTILINE)
    ((path, _key, _why),) = sessions(tmp_path)
    t = AiderAdapter().parse(Path(path)).transcript
    assert t is not None
    assert t.non_interactive
    assert [i.text for i in t.items if isinstance(i, UserMessage)] == [
        "first line of the prompt\nsecond line with ghp_SECRETSECRET\nthird line"
    ]
    assert [i.text for i in t.items if isinstance(i, AssistantText)] == ["The reply."]
    results = [i for i in t.items if isinstance(i, ToolResult)]
    assert not any("SECRET" in r.text or "third line" in r.text for r in results)
    (error,) = [r for r in results if "litellm" in r.text]
    assert error.is_error
    assert "its second line" in error.text


def _files(walked: list[tuple[str, object, object]]) -> set[str]:
    return {p.partition("#")[0] for p, _k, _w in walked}


def test_the_projects_memd_knows_are_looked_in_and_the_search_is_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipeline.agents.aider import places as aider_places
    from pipeline.roster import Places

    home, state = tmp_path / "home", tmp_path / "state"
    searched = write_history(home / "code" / "shop", HEADLESS)
    outside = write_history(tmp_path / "srv" / "api", HEADLESS)  # not under HOME: known only
    known = Places((str(outside.parent), str(tmp_path / "no-aider-here")), state)
    assert _files(aider.walk_places(home, known)) == {str(searched), str(outside)}

    # A repository made since is not searched for on the next scan (the search is cached)...
    later = write_history(home / "code" / "blog", HEADLESS)
    calls: list[Path] = []
    real_search = aider._search
    monkeypatch.setattr(aider, "_search", lambda r, d: calls.append(r) or real_search(r, d))
    assert _files(aider.walk_places(home, known)) == {str(searched), str(outside)}
    assert calls == []
    # ...but one in a project memd knows is, at once, and the quick check (no store) names the
    # projects the last scan named.
    known2 = Places((*known.projects, str(later.parent)), state)  # type: ignore[misc]
    assert _files(aider.walk_places(home, known2)) == {str(searched), str(outside), str(later)}
    assert _files(aider.walk_places(home, Places(None, state))) == {str(searched), str(outside), str(later)}
    assert calls == []
    # Once the search is SEARCH_EVERY_S old, or the root moved, the root is searched again.
    monkeypatch.setattr(aider_places, "SEARCH_EVERY_S", 0.0)
    assert str(later) in _files(aider.walk_places(home, known))
    assert calls == [home]
    # A history file deleted since the search is not listed (its sessions go), not "unreadable".
    monkeypatch.setattr(aider_places, "SEARCH_EVERY_S", 3600.0)
    searched.unlink()
    assert _files(aider.walk_places(home, known)) == {str(outside), str(later)}
    assert calls == [home]


def test_the_places_cache_is_memds_own_file(tmp_path: Path) -> None:
    from pipeline.agents.aider import places as aider_places
    from pipeline.roster import Places

    home, state = tmp_path / "home", tmp_path / "state"
    history = write_history(home / "repo", HEADLESS)
    state.mkdir()
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(
        '{"v": 1, "root": "x", "searched_at": 1e12, "found": ["/etc/passwd"], "projects": []}'
    )
    (state / aider_places.CACHE_FILE).symlink_to(elsewhere)
    assert _files(aider.walk_places(home, Places((), state))) == {str(history)}  # the link not read
    assert not (state / aider_places.CACHE_FILE).is_symlink()  # replaced, not written through
    assert "passwd" in elsewhere.read_text()
    (state / aider_places.CACHE_FILE).unlink()
    os.mkfifo(state / aider_places.CACHE_FILE)  # a FIFO: not read, nothing hangs
    assert _files(aider.walk_places(home, Places((), state))) == {str(history)}


async def test_a_scan_reads_aider_in_a_repository_another_agent_ran_in(
    tmp_path: Path, sqlite_store: Store
) -> None:
    from datetime import UTC, datetime, timedelta

    from pipeline.clock import FakeClock
    from pipeline.scan.probe import probe
    from pipeline.scan.scanner import scan
    from pipeline.settings import Settings
    from tests.pipeline.scan.test_scanner import _repo, _session

    clock = FakeClock(datetime(2026, 12, 8, 12, 0, tzinfo=UTC))
    repo = _repo(tmp_path / "srv" / "api")  # outside the folder Aider's search covers
    _session(tmp_path, repo, clock.now() - timedelta(hours=7))
    roots = {name: {"root": str(tmp_path / name), "enabled": False} for name in registry.names()}
    roots["claude_code"] = {"root": str(tmp_path / "claude")}
    roots["aider"] = {"root": str(tmp_path / "home")}
    settings = Settings.model_validate(
        {
            "paths": {
                "memory_dir": str(tmp_path / "mem"),
                "state_db": f"sqlite:///{tmp_path / 'state.db'}",
                "state_dir": str(tmp_path / "st"),
            },
            "sources": roots,
        }
    )
    (tmp_path / "home").mkdir()
    await scan(sqlite_store, settings, clock)  # the Claude Code session makes the repository known
    history = write_history(repo, HEADLESS)
    report = await scan(sqlite_store, settings, clock, settings_key="k")
    assert [s.path for s in report.sessions if s.source == "aider"] == [f"{history}#1"]
    # the quick check walks the same files: nothing changed; then Aider appends a session
    index = tmp_path / "st" / "scan-index.bin"
    assert probe(settings.paths.state_db, index, "k", clock.now().timestamp()) is not None
    with history.open("a") as f:
        f.write(aider_lines(INTERACTIVE))
    assert probe(settings.paths.state_db, index, "k", clock.now().timestamp()) is None

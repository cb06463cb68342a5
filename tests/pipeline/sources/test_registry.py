"""The source registry: every agent is one entry, and a new one is discovered, configured, scanned
and labelled with nothing but its adapter and its entry (here a toy agent, defined in this test)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from daemon.cli.config import template_text
from daemon.config import ConfigError, load_settings
from daemon.config_layers import inputs_key
from pipeline.agents.claude_code.transcripts import ClaudeCodeAdapter
from pipeline.clock import FakeClock
from pipeline.errors import TranscriptUnreadable
from pipeline.extract.item import Prepared, build, parse_full
from pipeline.extract.request import ExtractPrompts
from pipeline.safefile import read_capped
from pipeline.scan import index as scan_index
from pipeline.scan.probe import probe
from pipeline.scan.scanner import scan
from pipeline.settings import Settings, default_values
from pipeline.sources import registry, walk
from pipeline.sources.base import ParseResult, ParserState, SourceAdapter
from pipeline.store import Store
from pipeline.transcript import AssistantText, Item, Transcript, UserMessage
from tests.pipeline.extract.support import TagRedactor
from tests.source_names import SourceName

# -- a toy agent: ``<root>/<anything>/<session>.toy``, a header line then ``role|time|text`` lines --


def discover_toy(root: Path) -> Iterator[str]:
    return walk.walk_paths(root, lambda name: name.endswith(".toy"))


class ToyAdapter:
    source = "toy"

    def discover(self, root: Path) -> Iterator[Path]:
        return map(Path, discover_toy(root))

    def discover_paths(self, root: Path) -> Iterator[str]:
        return discover_toy(root)

    def parse(
        self,
        path: Path,
        start_offset: int = 0,
        state: ParserState | None = None,
        *,
        with_items: bool = True,
        max_bytes: int | None = None,
    ) -> ParseResult:
        raw = read_capped(path, 1 << 20)[:max_bytes]
        lines = raw.decode().splitlines()
        if not lines or not lines[0].startswith("toy "):
            return ParseResult(None, len(raw), None, TranscriptUnreadable("not a toy transcript"))
        _, session_id, cwd = lines[0].split(" ", 2)
        items: list[Item] = []
        for line in lines[1:]:
            role, at, text = line.split("|", 2)
            when = datetime.fromisoformat(at)
            items.append(UserMessage(text, when) if role == "user" else AssistantText(text, when))
        times = [item.timestamp for item in items if item.timestamp is not None]
        transcript = Transcript(
            source="toy",  # type: ignore[arg-type]  # a name outside the built-ins' vocabulary
            path=path,
            session_id=session_id,
            cwd=cwd,
            started_at=min(times),
            last_activity=max(times),
            user_message_count=sum(isinstance(item, UserMessage) for item in items),
            items=tuple(items) if with_items else (),
            items_complete=with_items,
            ingest_offset=len(raw),
        )
        return ParseResult(transcript, len(raw), {})


def toy_home(env: registry.Env) -> Path:
    return Path(env["TOY_HOME"]) if env.get("TOY_HOME") else Path(env["HOME"]) / ".toy"


@pytest.fixture
def toy() -> Iterator[registry.Source]:
    source = registry.register(
        registry.Source(
            name="toy",
            label="Toy Agent",
            default_root=lambda env: toy_home(env) / "sessions",
            discover=discover_toy,
            adapter=ToyAdapter,
            env=("TOY_HOME",),
        )
    )
    yield source
    registry.unregister("toy")


def _toy_session(root: Path, cwd: Path, session_id: str, at: datetime) -> Path:
    path = root / "2026" / f"{session_id}.toy"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"toy {session_id} {cwd}"]
    for n in range(2):
        lines.append(f"user|{at.isoformat()}|please fix bug {n}")
        lines.append(f"assistant|{at.isoformat()}|fixed bug {n}")
    path.write_text("\n".join(lines) + "\n")
    return path


def _repo(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


# -- the built-ins ----------------------------------------------------------------------------


def test_every_built_in_source_has_one_entry_in_vocabulary_order() -> None:
    names = registry.names()
    assert tuple(n for n in names if n != "aider") == tuple(SourceName)  # Aider's tests name it themselves
    assert names.index("aider") == names.index("qwen_code") + 1
    assert all(type(name) is str for name in registry.names())  # stored and marshalled as plain text
    assert {name: registry.label_of(name) for name in registry.names()} == {
        "claude_code": "Claude Code",
        "codex": "Codex CLI",
        "gemini_cli": "Gemini CLI",
        "pi": "Pi",
        "opencode": "OpenCode",
        "copilot_cli": "GitHub Copilot CLI",
        "qwen_code": "Qwen Code",
        "aider": "Aider",
        "openhands": "OpenHands",
        "cline": "Cline",
    }
    assert registry.label_of("gone_agent") == "gone_agent"


def test_the_default_roots_follow_the_environment() -> None:
    env = {"HOME": "/h", "CODEX_HOME": "/cx", "COPILOT_HOME": "/cp", "QWEN_HOME": "/qw"}
    assert registry.default_tables(env) == {
        "claude_code": {"enabled": True, "root": "/h/.claude/projects"},
        "codex": {"enabled": True, "root": "/cx/sessions"},
        "gemini_cli": {"enabled": True, "root": "/h/.gemini/tmp"},
        "pi": {"enabled": True, "root": "/h/.pi/agent/sessions"},
        "opencode": {"enabled": True, "root": "/h/.local/share/opencode"},
        "copilot_cli": {"enabled": True, "root": "/cp/session-state"},
        "qwen_code": {"enabled": True, "root": "/qw/projects"},
        "aider": {"enabled": True, "root": "/h"},
        "openhands": {"enabled": True, "root": "/h/.openhands/conversations"},
        "cline": {"enabled": True, "root": "/h/.cline/data/sessions"},
    }
    assert registry.default_tables({"HOME": "/h", "XDG_DATA_HOME": "/d"})["opencode"]["root"] == "/d/opencode"
    plain = registry.default_tables({"HOME": "/h"})
    assert plain["codex"]["root"] == "/h/.codex/sessions"
    assert plain["copilot_cli"]["root"] == "/h/.copilot/session-state"
    assert plain["qwen_code"]["root"] == "/h/.qwen/projects"
    # Qwen Code keeps its runtime files (chats, memory) under $QWEN_RUNTIME_DIR when it is set.
    assert registry.default_tables({**env, "QWEN_RUNTIME_DIR": "/rt"})["qwen_code"]["root"] == "/rt/projects"
    assert (
        registry.default_tables({"HOME": "/h", "PI_CODING_AGENT_DIR": "/pa"})["pi"]["root"] == "/pa/sessions"
    )
    # OpenHands keeps its conversations under $OPENHANDS_CONVERSATIONS_DIR, else its persistence folder.
    moved = {"HOME": "/h", "OPENHANDS_PERSISTENCE_DIR": "/oh"}
    assert registry.default_tables(moved)["openhands"]["root"] == "/oh/conversations"
    moved["OPENHANDS_CONVERSATIONS_DIR"] = "/conv"
    assert registry.default_tables(moved)["openhands"]["root"] == "/conv"
    assert registry.default_env() == (
        "CODEX_HOME",
        "PI_CODING_AGENT_DIR",
        "PI_CODING_AGENT_SESSION_DIR",
        "COPILOT_HOME",
        "QWEN_RUNTIME_DIR",
        "QWEN_HOME",
        "AIDER_CHAT_HISTORY_FILE",
        "OPENHANDS_PERSISTENCE_DIR",
        "OPENHANDS_CONVERSATIONS_DIR",
        "CLINE_SESSION_DATA_DIR",
        "CLINE_DATA_DIR",
        "CLINE_DIR",
    )
    # Cline's sessions move with $CLINE_SESSION_DATA_DIR, else $CLINE_DATA_DIR, else $CLINE_DIR.
    cline = {**env, "CLINE_DIR": "/cl"}
    assert registry.default_tables(cline)["cline"]["root"] == "/cl/data/sessions"
    assert registry.default_tables({**cline, "CLINE_DATA_DIR": "/cd"})["cline"]["root"] == "/cd/sessions"
    moved = {**cline, "CLINE_DATA_DIR": "/cd", "CLINE_SESSION_DATA_DIR": "/cs"}
    assert registry.default_tables(moved)["cline"]["root"] == "/cs"


def test_adapters_are_imported_on_first_use_and_carry_their_name() -> None:
    adapter = registry.adapter_for(SourceName.CLAUDE_CODE)
    assert isinstance(adapter, ClaudeCodeAdapter)
    assert adapter.source == SourceName.CLAUDE_CODE
    for name in SourceName:
        assert registry.adapter_for(name).source == name
    with pytest.raises(ValueError, match="unknown transcript source: 'nope'"):
        registry.adapter_for("nope")


def test_a_name_is_registered_once() -> None:
    with pytest.raises(ValueError, match="already registered"):
        registry.register(registry.get(SourceName.PI))


def test_an_unparseable_file_names_the_agent_by_its_label(tmp_path: Path) -> None:
    path = tmp_path / "rollout-x.jsonl"
    path.write_text('{"hello": "world"}\n')
    problem = registry.adapter_for(SourceName.CODEX).parse(path).problem
    assert problem is not None
    assert problem.reason.startswith("not a Codex CLI transcript")


# -- a toy agent, registered by the test alone ------------------------------------------------


def test_a_registered_source_is_discovered(toy: registry.Source, tmp_path: Path) -> None:
    at = datetime(2026, 10, 1, 9, 0)
    path = _toy_session(tmp_path, tmp_path, "s1", at)
    (tmp_path / "notes.txt").write_text("not a session")
    assert list(registry.get("toy").discover(tmp_path)) == [str(path)]
    assert isinstance(registry.adapter_for("toy"), ToyAdapter)
    assert isinstance(registry.adapter_for("toy"), SourceAdapter)


def test_a_registered_source_is_configured(toy: registry.Source, tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    assert default_values(env)["sources"]["toy"] == {"enabled": True, "root": f"{tmp_path}/.toy/sessions"}
    assert load_settings(None, env).settings.sources["toy"].root == tmp_path / ".toy" / "sessions"
    assert "toy" in load_settings(None, env).settings.sources.enabled()
    # From its default's own variable, the file and the environment, like any source.
    assert load_settings(None, {**env, "TOY_HOME": "/t"}).settings.sources["toy"].root == Path("/t/sessions")
    config = tmp_path / "config.toml"
    config.write_text('[sources.toy]\nroot = "~/toys"\n')
    assert load_settings(config, env).settings.sources["toy"].root == Path.home() / "toys"
    off = load_settings(config, {**env, "MEMD_SOURCES__TOY__ENABLED": "false"}).settings.sources
    assert "toy" not in off.enabled()
    # The variable its default reads is part of the settings' key (the scan index trusts it).
    assert inputs_key(config, b"", {**env, "TOY_HOME": "/a"}) != inputs_key(
        config, b"", {**env, "TOY_HOME": "/b"}
    )
    # `memd config init` writes its table, with its default.
    text = template_text()
    assert (
        '[sources.toy]\n# enabled = true\n# root = "$TOY_HOME/sessions"  # without $TOY_HOME: ~/.toy/sessions\n'
        in text
    )


def test_once_unregistered_its_name_is_an_unknown_source(toy: registry.Source, tmp_path: Path) -> None:
    registry.unregister("toy")
    config = tmp_path / "config.toml"
    config.write_text('[sources.toy]\nroot = "/t"\n')
    with pytest.raises(ConfigError, match=r"sources\.toy: unknown source \(memd knows claude_code, codex"):
        load_settings(config, {"HOME": str(tmp_path)})
    assert "[sources.toy]" not in template_text()


async def test_a_registered_source_is_scanned_and_labelled(
    toy: registry.Source, store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    settings = load_settings(None, {"HOME": str(tmp_path)}).settings
    root = settings.sources["toy"].root
    repo = _repo(tmp_path / "work" / "app")
    idle = _toy_session(root, repo, "idle-1", clock.now() - timedelta(hours=7))
    active = _toy_session(root, repo, "active-1", clock.now() - timedelta(hours=1))
    bad = root / "2026" / "bad.toy"
    bad.write_text("this is no toy\n")

    report = await scan(store, settings, clock)
    by_path = {s.path: s for s in report.sessions}
    assert {s.source for s in report.sessions} == {"toy"}
    assert (by_path[str(idle)].state, by_path[str(idle)].session_id) == ("eligible", "idle-1")
    assert by_path[str(idle)].project == str(repo)
    assert by_path[str(active)].state == "active"
    assert (by_path[str(bad)].state, by_path[str(bad)].reason) == ("unreadable", "not a toy transcript")
    assert report.enqueued == 1

    built = await build(
        store,
        settings,
        str(by_path[str(idle)].id),
        prompts=ExtractPrompts.load(),
        redactor=TagRedactor(),
        load=parse_full,
    )
    assert isinstance(built, Prepared)
    assert "- Agent: Toy Agent\n" in json.dumps(built.params["messages"]).replace("\\n", "\n")


async def test_the_quick_check_walks_a_registered_source(
    toy: registry.Source, sqlite_store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    values = default_values({"HOME": str(tmp_path)})
    values["paths"]["state_db"] = f"sqlite:///{tmp_path}/state.db"
    settings = Settings.model_validate(values)
    root = settings.sources["toy"].root
    _toy_session(root, tmp_path, "idle-1", clock.now() - timedelta(hours=7))
    await scan(sqlite_store, settings, clock, settings_key="k")
    index = scan_index.index_path(settings.paths.state_dir)
    found = probe(settings.paths.state_db, index, "k", clock.now().timestamp())
    assert found is not None
    assert found.files_seen == 1
    _toy_session(root, tmp_path, "new-1", clock.now() - timedelta(hours=7))
    assert probe(settings.paths.state_db, index, "k", clock.now().timestamp()) is None

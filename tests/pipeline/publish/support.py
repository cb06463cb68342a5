"""Builders for the publishing tests: a memory repository, agent homes under tmp_path, settings, rows."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from pipeline.machine import UNNAMED
from pipeline.projects import scope_for
from pipeline.settings import PathsSettings, PublishSettings, Settings, SourceSettings, SourcesSettings
from pipeline.store import Store
from pipeline.store.schema import scopes, transcripts

HOSTILE = ("fifo", "dev_zero")
"""Files that hang or exhaust a careless reader: a FIFO no one writes to, a symlink to ``/dev/zero``."""


def make_hostile(path: Path, kind: str) -> Path:
    """Put a ``HOSTILE`` file at ``path`` (its folder created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    return path


def topic_text(
    name: str,
    *,
    description: str = "",
    type_: str = "project",
    updated: str = "2026-10-30",
    sources: Sequence[str] = ("sess-1",),
    expires: str | None = None,
    body: str = "Body.",
) -> str:
    lines = [
        "---",
        f"name: {name}",
        f"description: {description or 'About ' + name}",
        f"type: {type_}",
        "created: 2026-10-01",
        f"updated: {updated}",
        "sources: " + json.dumps(list(sources)),
    ]
    if expires:
        lines.append(f"expires: {expires}")
    return "\n".join([*lines, "---", body, ""])


def write_scope(
    memory_dir: Path, scope: str, *, summary: str = "", topics: dict[str, str] | None = None, index: str = ""
) -> Path:
    folder = memory_dir.joinpath(*scope.split("/"))
    folder.mkdir(parents=True, exist_ok=True)
    if summary:
        (folder / "memory_summary.md").write_text(summary)
    for name, text in (topics or {}).items():
        (folder / name).write_text(text)
    (folder / "MEMORY.md").write_text(index or "".join(f"- {n}\n" for n in (topics or {})))
    (folder / "raw_memories.md").write_text("raw inputs: never published\n")
    (folder / "rollout_summaries").mkdir(exist_ok=True)
    (folder / "rollout_summaries" / "x.md").write_text("input\n")
    return folder


@dataclass
class Env:
    tmp: Path
    home: Path
    memory_dir: Path

    @property
    def claude_home(self) -> Path:
        return self.home / ".claude"

    @property
    def gemini_home(self) -> Path:
        return self.home / ".gemini"

    @property
    def codex_home(self) -> Path:
        return self.home / ".codex"

    @property
    def copilot_home(self) -> Path:
        return self.home / ".copilot"

    @property
    def qwen_home(self) -> Path:
        return self.home / ".qwen"

    @property
    def openhands_home(self) -> Path:
        return self.home / ".openhands"

    @property
    def cline_home(self) -> Path:
        return self.home / ".cline"

    def settings(self, **publish: Any) -> Settings:
        root = self.tmp / "roots"
        return Settings(
            paths=PathsSettings(
                memory_dir=self.memory_dir,
                state_db=f"sqlite:///{self.tmp / 'unused.db'}",
                state_dir=self.tmp / "state",
            ),
            sources=SourcesSettings(
                claude_code=SourceSettings(root=self.claude_home / "projects"),
                codex=SourceSettings(root=self.codex_home / "sessions"),
                gemini_cli=SourceSettings(root=self.gemini_home / "tmp"),
                pi=SourceSettings(root=root / "pi"),
                opencode=SourceSettings(root=root / "opencode"),
                copilot_cli=SourceSettings(root=self.copilot_home / "session-state"),
                qwen_code=SourceSettings(root=self.qwen_home / "projects"),
                aider=SourceSettings(root=root / "aider"),
                openhands=SourceSettings(root=self.openhands_home / "conversations"),
                cline=SourceSettings(root=self.cline_home / "data" / "sessions"),
            ),
            # Qwen Code's memory, Aider's, OpenHands' skill and Cline's global rule are on by default;
            # the tests about other targets leave them out.
            publish=PublishSettings(
                **{
                    "qwen_code": False,
                    "aider_global": False,
                    "openhands_global": False,
                    "cline_global": False,
                    **publish,
                }
            ),
        )

    def project(self, name: str) -> Path:
        path = self.tmp / "src" / name
        path.mkdir(parents=True, exist_ok=True)
        return path


def make_env(tmp_path: Path) -> Env:
    home = tmp_path / "home"
    home.mkdir()
    memory_dir = tmp_path / "memory"
    memory_dir.mkdir()
    env = Env(tmp=tmp_path, home=home, memory_dir=memory_dir)
    env.claude_home.mkdir()  # Claude Code is set up; each test sets up Gemini CLI and Codex as it needs
    return env


async def add_scope(store: Store, project: str, now: datetime) -> str:
    key = scope_for(project)
    async with store.write() as conn:
        await conn.execute(scopes.insert().values(key=key, project=project, updated_at=now))
    return key


_next_id = iter(range(1, 1_000_000))


async def add_transcript(
    store: Store,
    *,
    project: str | None,
    last_activity: datetime,
    session_id: str | None = None,
    source: str = "claude_code",
) -> int:
    n = next(_next_id)
    async with store.write() as conn:
        result = await conn.execute(
            transcripts.insert().values(
                machine=UNNAMED,
                source=source,
                path=f"/transcripts/{n}.jsonl",
                session_id=session_id or f"s{n}",
                project=project,
                last_activity=last_activity,
                first_seen_at=last_activity,
                updated_at=last_activity,
                state="extracted",
            )
        )
        assert result.inserted_primary_key is not None
        return int(result.inserted_primary_key[0])


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        [
            "git",
            "-c",
            "user.email=t@example.com",
            "-c",
            "user.name=t",
            "-c",
            "init.defaultBranch=main",
            *args,
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()

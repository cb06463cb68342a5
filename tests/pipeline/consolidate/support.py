"""Builders for the phase-2 tests (not a test module): settings, the env, extracts, scripted memory-tool turns."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import insert, select

from daemon.runtime import memory_repo
from pipeline.clock import FakeClock
from pipeline.gitrepo.repository import MemoryRepo
from pipeline.llm.client import LLMClient, build_client
from pipeline.redaction import Redactor
from pipeline.settings import Settings, default_values
from pipeline.store import Store
from pipeline.store.schema import stage1_outputs, transcripts
from tests.fakes.anthropic_api import FakeAnthropicAPI, FakeResponse, message, tool_use, tool_use_message
from tests.fakes.fixtures import FAKE_API_KEY

SECRET_LINE = 'password = "hunter2hunter2Zq9"'


def make_settings(tmp_path: Path, base_url: str, **sections: dict[str, Any]) -> Settings:
    values = default_values({"HOME": str(tmp_path)})
    values["paths"]["memory_dir"] = str(tmp_path / "memory")
    values["paths"]["state_dir"] = str(tmp_path / "state")
    values["llm"] = {"base_url": base_url, "batch": "off", **sections.pop("llm", {})}
    values.update(sections)
    return Settings.model_validate(values)


@dataclass
class Env:
    tmp_path: Path
    store: Store
    clock: FakeClock
    api: FakeAnthropicAPI
    settings: Settings
    llm: LLMClient
    redactor: Redactor

    @property
    def repo(self) -> MemoryRepo:
        """The memory repository as the runtime makes it for these settings."""
        return memory_repo(self.settings)

    def with_settings(self, **sections: dict[str, Any]) -> Env:
        settings = make_settings(self.tmp_path, self.api.base_url, **sections)
        llm = build_client(
            settings,
            store=self.store,
            clock=self.clock,
            env={"ANTHROPIC_API_KEY": FAKE_API_KEY},
            rng=random.Random(1),
        )
        return Env(self.tmp_path, self.store, self.clock, self.api, settings, llm, self.redactor)

    async def add_extract(
        self,
        session_id: str,
        *,
        project: str | None = "/work/acme",
        summary: str = "The user fixed the flaky login test.",
        raw: str = "- tests run with `make test`",
        created_at: datetime | None = None,
        last_used_at: datetime | None = None,
        supersede: int | None = None,
        memories: list[dict[str, Any]] | None = None,
    ) -> int:
        from pipeline.projects import scope_for

        now = created_at or self.clock.now()
        async with self.store.write() as conn:
            tid = (
                await conn.execute(
                    select(transcripts.c.id).where(transcripts.c.path == f"/t/{session_id}.jsonl")
                )
            ).scalar()
            if tid is None:
                tid = (
                    await conn.execute(
                        insert(transcripts)
                        .values(
                            machine=self.store.machine,
                            source="claude_code",
                            path=f"/t/{session_id}.jsonl",
                            session_id=session_id,
                            project=project,
                            first_seen_at=now,
                            updated_at=now,
                            state="extracted",
                        )
                        .returning(transcripts.c.id)
                    )
                ).scalar_one()
            new_id = (
                await conn.execute(
                    insert(stage1_outputs)
                    .values(
                        transcript_id=tid,
                        source="claude_code",
                        session_id=session_id,
                        project=project,
                        scope=scope_for(project),
                        range_start=0,
                        range_end=100,
                        rollout_slug=f"slug {session_id}",
                        rollout_summary=summary,
                        raw_memory=raw,
                        memories=memories or [],
                        model="claude-haiku-5-5",
                        usage={},
                        session_started_at=now - timedelta(hours=2),
                        session_last_activity=now - timedelta(hours=1),
                        created_at=now,
                        last_used_at=last_used_at,
                    )
                    .returning(stage1_outputs.c.id)
                )
            ).scalar_one()
            if supersede is not None:
                from sqlalchemy import update

                await conn.execute(
                    update(stage1_outputs)
                    .where(stage1_outputs.c.id == supersede)
                    .values(superseded_by=new_id)
                )
        return int(new_id)


def candidate(type_: str, name: str, body: str) -> dict[str, Any]:
    """A candidate memory as phase 1 stores it (``CandidateMemory``, redacted)."""
    return {
        "type": type_,
        "name": name,
        "description": f"{name}, when it matters",
        "body": body,
        "why": "the user said so",
        "how_to_apply": "follow it",
        "dates": [],
    }


# ---------------------------------------------------------------- scripted memory-tool turns


def mem(command: str, **fields: Any) -> dict[str, Any]:
    return tool_use("memory", {"command": command, **fields})


def turn(*blocks: dict[str, Any]) -> FakeResponse:
    return tool_use_message(*blocks, model="claude-sonnet-5-5")


def done(text: str = "Consolidated.") -> FakeResponse:
    return message(text, model="claude-sonnet-5-5")


def topic(name: str, body: str, *, type_: str = "project", extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: {name} for agents\ntype: {type_}\n{extra}---\n{body}\n"


def write_memory(
    topics: dict[str, str] | None = None, *, summary: str = "# Summary\n\nThe user works on acme.\n"
) -> list[FakeResponse]:
    """Turns that write a valid scope: the topics, an index listing them, the summary."""
    topics = topics if topics is not None else {"testing.md": topic("Testing", "Run `make test`.")}
    index = "# Memory index\n\n" + "".join(f"- [{n}]({n}) — about {n}\n" for n in topics)
    creates = [mem("create", path=f"/memories/{n}", file_text=t) for n, t in topics.items()]
    return [
        turn(mem("view", path="/memories")),
        turn(*creates) if creates else turn(mem("view", path="/memories/raw_memories.md")),
        turn(
            mem("create", path="/memories/MEMORY.md", file_text=index),
            mem("create", path="/memories/memory_summary.md", file_text=summary),
        ),
        done(),
    ]


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool_result blocks of the last user message of a request body."""
    last = body["messages"][-1]
    return [b for b in last["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]


def last_user_text(body: dict[str, Any]) -> str:
    last = body["messages"][-1]
    content = last["content"]
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")


def request_bodies(api: FakeAnthropicAPI) -> list[dict[str, Any]]:
    return [r.json for r in api.message_requests()]


def dump(obj: Any) -> str:
    return json.dumps(obj, default=str)


Script = Callable[[], Iterable[FakeResponse]]


def short_topics(deploy_body: str) -> dict[str, str]:
    """``testing.md`` and ``deploy.md`` (with ``deploy_body``): the scope the steering tests start from."""
    return {
        "testing.md": topic("Testing", "Run `make test`."),
        "deploy.md": topic("Deploy", deploy_body),
    }

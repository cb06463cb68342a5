"""Usage: reads of memd's files in later Claude Code and Codex sessions, counted once, feeding retention."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import select

from pipeline.agents.claude_code.publish import memory_folder
from pipeline.agents.claude_code.transcripts import ClaudeCodeAdapter
from pipeline.agents.codex.publish import memories_dir
from pipeline.agents.codex.transcripts import CodexAdapter
from pipeline.clock import FakeClock
from pipeline.hits.record import RECALL_FILE, record_memory_uses, usage_summary
from pipeline.publish.run import publish_all
from pipeline.store import Store
from pipeline.store.schema import memory_uses, stage1_outputs
from pipeline.transcript import MemoryRead, Transcript
from tests.pipeline.publish.support import Env, add_scope, add_transcript, topic_text, write_scope

READ_AT = datetime(2026, 11, 2, 9, 30, tzinfo=UTC)


def _iso(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _claude_session(path: Path, cwd: str, read: str, recall_text: str) -> Path:
    sid = "11111111-2222-3333-4444-555555555555"
    base = {"isSidechain": False, "userType": "external", "cwd": cwd, "sessionId": sid, "version": "2.1.300"}
    lines: list[dict[str, Any]] = [
        {
            **base,
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "timestamp": _iso(READ_AT - timedelta(minutes=1)),
            "message": {"role": "user", "content": f"{recall_text}\nFix the failing test please."},
        },
        {
            **base,
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "timestamp": _iso(READ_AT),
            "message": {
                "id": "msg_1",
                "role": "assistant",
                "model": "claude-x",
                "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": read}}
                ],
                "stop_reason": "tool_use",
            },
        },
        {
            **base,
            "type": "user",
            "uuid": "u2",
            "parentUuid": "a1",
            "timestamp": _iso(READ_AT + timedelta(seconds=1)),
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}],
            },
        },
        {
            **base,
            "type": "assistant",
            "uuid": "a2",
            "parentUuid": "u2",
            "timestamp": _iso(READ_AT + timedelta(seconds=2)),
            "message": {
                "id": "msg_2",
                "role": "assistant",
                "model": "claude-x",
                "content": [{"type": "text", "text": "Done."}],
                "stop_reason": "end_turn",
            },
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _codex_session(path: Path, cwd: str, command: str) -> Path:
    sid = "019c8a59-e9dd-71f0-9ae3-4079fe9726a9"
    at = _iso(READ_AT)
    lines = [
        {
            "timestamp": at,
            "type": "session_meta",
            "payload": {"id": sid, "timestamp": at, "cwd": cwd, "source": "cli"},
        },
        {
            "timestamp": at,
            "type": "event_msg",
            "payload": {"type": "user_message", "message": "what do we know?"},
        },
        {
            "timestamp": at,
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "name": "exec_command",
                "arguments": json.dumps({"cmd": command, "workdir": cwd}),
                "call_id": "call_1",
            },
        },
        {
            "timestamp": at,
            "type": "response_item",
            "payload": {"type": "function_call_output", "call_id": "call_1", "output": "memory text"},
        },
        {"timestamp": at, "type": "event_msg", "payload": {"type": "task_complete", "turn_id": "t1"}},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


async def _stage1(store: Store, transcript_id: int, session_id: str, *, superseded: bool = False) -> int:
    async with store.write() as conn:
        result = await conn.execute(
            stage1_outputs.insert().values(
                transcript_id=transcript_id,
                source="claude_code",
                session_id=session_id,
                scope="x",
                range_start=0,
                range_end=1,
                rollout_slug="s",
                rollout_summary="s",
                raw_memory="r",
                memories=[],
                model="m",
                usage={},
                created_at=READ_AT - timedelta(days=5),
                superseded_by=1 if superseded else None,
            )
        )
        assert result.inserted_primary_key is not None
        return int(result.inserted_primary_key[0])


async def _counts(store: Store) -> dict[int, tuple[int, datetime | None]]:
    async with store.read() as conn:
        rows = (
            await conn.execute(
                select(stage1_outputs.c.id, stage1_outputs.c.use_count, stage1_outputs.c.last_used_at)
            )
        ).all()
    return {r[0]: (r[1], r[2]) for r in rows}


async def _setup(env: Env, store: Store, clock: FakeClock) -> tuple[str, str]:
    project = str(env.project("app"))
    env.codex_home.mkdir()
    scope = await add_scope(store, project, clock.now())
    write_scope(
        env.memory_dir,
        scope,
        summary="App digest.",
        topics={"tests.md": topic_text("Tests", sources=["sess-A", "claude_code:sess-B"])},
    )
    write_scope(
        env.memory_dir, "global", summary="Global.", topics={"u.md": topic_text("U", sources=["sess-G"])}
    )
    await publish_all(store, env.settings(gemini=False, codex=True), clock)
    return project, scope


async def test_claude_code_read_and_recall_are_recorded_and_bump_the_sources(
    env: Env, store: Store, clock: FakeClock
) -> None:
    project, scope = await _setup(env, store, clock)
    origin = await add_transcript(store, project=project, last_activity=clock.now(), session_id="sess-A")
    a = await _stage1(store, origin, "sess-A")
    a_old = await _stage1(store, origin, "sess-A", superseded=True)
    b = await _stage1(store, origin, "sess-B")
    g = await _stage1(store, origin, "sess-G")

    read = str(memory_folder(env.claude_home, project) / "memd-tests.md")
    recall_text = "<memd-recall>\n## Memory of app\n</memd-recall>"
    path = _claude_session(env.tmp / "s.jsonl", project, read, recall_text)
    parsed = ClaudeCodeAdapter().parse(path)
    assert parsed.transcript is not None
    transcript = parsed.transcript
    assert {r.via for r in transcript.memory_reads} == {"read_tool", "recall"}

    later = await add_transcript(store, project=project, last_activity=READ_AT)
    assert await record_memory_uses(store, later, transcript, clock.now()) == 2
    async with store.read() as conn:
        uses = {(r.scope, r.file, r.used_at) for r in (await conn.execute(select(memory_uses))).all()}
    assert uses == {(scope, "tests.md", READ_AT), (scope, RECALL_FILE, READ_AT - timedelta(minutes=1))}
    counts = await _counts(store)
    assert counts[a] == (1, READ_AT)
    assert counts[b] == (1, READ_AT), "a source written as '<agent>:<session>' matches the session"
    assert counts[a_old] == (0, None), "a superseded extract is not an input any more"
    assert counts[g] == (0, None), "the recall block bumps nothing: it holds every memory's index line"

    # The scanner records the same (cumulative) reads again after the session grows: nothing doubles.
    assert await record_memory_uses(store, later, transcript, clock.now()) == 0
    assert (await _counts(store))[a] == (1, READ_AT)


async def test_codex_shell_reads_are_recorded_even_with_a_relative_path(
    env: Env, store: Store, clock: FakeClock
) -> None:
    project, _ = await _setup(env, store, clock)
    origin = await add_transcript(store, project=project, last_activity=clock.now())
    g = await _stage1(store, origin, "sess-G")
    folder = memories_dir(env.codex_home)
    command = f"cd {env.codex_home} && cat memories/memd-global--u.md | head -50 && sed -n 1,20p {folder / 'MEMORY.md'}"
    path = _codex_session(
        env.tmp / "rollout-2026-11-02T09-30-00-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl", project, command
    )
    parsed = CodexAdapter().parse(path)
    assert parsed.transcript is not None
    assert [r.via for r in parsed.transcript.memory_reads] == ["shell"]

    later = await add_transcript(store, project=project, last_activity=READ_AT, source="codex")
    assert await record_memory_uses(store, later, parsed.transcript, clock.now()) == 1
    assert (await _counts(store))[g] == (1, READ_AT)


async def test_reads_of_other_files_and_unknown_paths_count_for_nothing(
    env: Env, store: Store, clock: FakeClock
) -> None:
    project, _ = await _setup(env, store, clock)
    later = await add_transcript(store, project=project, last_activity=READ_AT)
    transcript = Transcript(
        source="claude_code",
        path=Path("/x.jsonl"),
        session_id="s",
        cwd=project,
        started_at=READ_AT,
        last_activity=READ_AT,
        user_message_count=1,
        memory_reads=(
            MemoryRead("/elsewhere/memory/memd-tests.md", READ_AT, "read_tool"),
            MemoryRead("memd-nothing.md", None, "shell"),
        ),
    )
    assert await record_memory_uses(store, later, transcript, clock.now()) == 0


async def test_usage_summary_gives_a_hit_rate_per_scope(env: Env, store: Store, clock: FakeClock) -> None:
    project, scope = await _setup(env, store, clock)
    clock.advance(timedelta(days=2))
    read = str(memory_folder(env.claude_home, project) / "memd-tests.md")
    ids = [await add_transcript(store, project=project, last_activity=READ_AT) for _ in range(4)]
    await add_transcript(store, project=str(env.project("other")), last_activity=READ_AT)
    for tid in ids[:1]:
        transcript = Transcript(
            source="claude_code",
            path=Path("/x.jsonl"),
            session_id="s",
            cwd=project,
            started_at=READ_AT,
            last_activity=READ_AT,
            user_message_count=1,
            memory_reads=(MemoryRead(read, READ_AT, "read_tool"), MemoryRead("", READ_AT, "recall")),
        )
        await record_memory_uses(store, tid, transcript, clock.now())
    summary = {s.scope: s for s in await usage_summary(store, clock.now())}
    app = summary[scope]
    assert (app.sessions, app.sessions_reading, app.sessions_given) == (4, 1, 1)
    assert app.hit_rate == 0.25
    assert (app.topics_published, app.topics_read, app.last_used_at) == (1, 1, READ_AT)
    glob = summary["global"]
    assert (glob.sessions, glob.sessions_reading, glob.hit_rate) == (5, 0, 0.0)


async def test_an_auto_loaded_index_is_given_not_a_hit_and_a_loaded_topic_is_a_use(
    env: Env, store: Store, clock: FakeClock
) -> None:
    project, scope = await _setup(env, store, clock)
    # The session the memory came from ended before memd first published: not counted.
    origin = await add_transcript(store, project=project, last_activity=clock.now() - timedelta(hours=1))
    a = await _stage1(store, origin, "sess-A")
    folder = memory_folder(env.claude_home, project)
    only_index = await add_transcript(store, project=project, last_activity=READ_AT)
    with_topic = await add_transcript(store, project=project, last_activity=READ_AT)

    def session(*reads: MemoryRead) -> Transcript:
        return Transcript(
            source="claude_code",
            path=Path("/x.jsonl"),
            session_id="s",
            cwd=project,
            started_at=READ_AT,
            last_activity=READ_AT,
            user_message_count=1,
            memory_reads=reads,
        )

    index = MemoryRead(str(folder / "MEMORY.md"), READ_AT, "injected")
    assert await record_memory_uses(store, only_index, session(index), clock.now()) == 1
    assert (await _counts(store))[a] == (0, None), "Claude Code loads MEMORY.md into every session"
    topic = MemoryRead(str(folder / "memd-tests.md"), READ_AT, "injected")
    assert await record_memory_uses(store, with_topic, session(index, topic), clock.now()) == 2
    assert (await _counts(store))[a] == (1, READ_AT)
    clock.advance(timedelta(days=1))
    (usage,) = [u for u in await usage_summary(store, clock.now()) if u.scope == scope]
    assert (usage.sessions, usage.sessions_reading, usage.sessions_given) == (2, 1, 2)
    assert usage.hit_rate == 0.5

from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from pipeline.clock import FakeClock
from pipeline.scan.scanner import scan
from pipeline.settings import Settings
from pipeline.sources import registry as registry_module
from pipeline.store import Store, jobs
from pipeline.store.schema import transcripts


def _settings(tmp_path: Path, **memories: object) -> Settings:
    return Settings.model_validate(
        {
            "paths": {
                "memory_dir": str(tmp_path / "mem"),
                "state_db": "sqlite:///x",
                "state_dir": str(tmp_path / "st"),
            },
            "sources": {
                "claude_code": {"root": str(tmp_path / "claude")},
                "codex": {"root": str(tmp_path / "codex"), "enabled": False},
                "gemini_cli": {"root": str(tmp_path / "gemini"), "enabled": False},
                "pi": {"root": str(tmp_path / "pi"), "enabled": False},
                "opencode": {"root": str(tmp_path / "opencode"), "enabled": False},
                "copilot_cli": {"root": str(tmp_path / "copilot"), "enabled": False},
                "qwen_code": {"root": str(tmp_path / "qwen"), "enabled": False},
                "aider": {"root": str(tmp_path / "aider"), "enabled": False},
                "openhands": {"root": str(tmp_path / "openhands"), "enabled": False},
                "cline": {"root": str(tmp_path / "cline"), "enabled": False},
            },
            "memories": memories,
        }
    )


def _ts(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _user(sid: str, cwd: str, text: str, at: datetime, n: int) -> str:
    return json.dumps(
        {
            "type": "user",
            "sessionId": sid,
            "cwd": cwd,
            "uuid": f"u{n}",
            "timestamp": _ts(at),
            "version": "2.1.39",
            "message": {"role": "user", "content": text},
        }
    )


def _assistant(sid: str, cwd: str, text: str, at: datetime, n: int) -> str:
    return json.dumps(
        {
            "type": "assistant",
            "sessionId": sid,
            "cwd": cwd,
            "uuid": f"a{n}",
            "timestamp": _ts(at),
            "version": "2.1.39",
            "message": {"id": f"msg_{n}", "role": "assistant", "content": [{"type": "text", "text": text}]},
        }
    )


SID = "4d5611e5-241a-462a-8d15-5122611a9569"


def _session(tmp_path: Path, cwd: Path, at: datetime, *, sid: str = SID, turns: int = 2) -> Path:
    folder = tmp_path / "claude" / ("-" + str(cwd).strip("/").replace("/", "-"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{sid}.jsonl"
    lines = []
    for n in range(turns):
        lines.append(_user(sid, str(cwd), f"please fix bug {n}", at, n))
        lines.append(_assistant(sid, str(cwd), f"fixed bug {n}", at, n))
    path.write_text("\n".join(lines) + "\n")
    return path


def _repo(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


async def test_an_idle_session_becomes_eligible_with_its_project_and_a_job(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    repo = _repo(tmp_path / "work" / "app")
    (repo / "src").mkdir()
    path = _session(tmp_path, repo / "src", clock.now() - timedelta(hours=7))
    report = await scan(store, _settings(tmp_path), clock)
    [s] = report.sessions
    assert (s.source, s.path, s.session_id, s.state) == ("claude_code", str(path), SID, "eligible")
    assert s.project == str(repo)
    assert s.user_messages == 2
    assert s.last_activity == clock.now() - timedelta(hours=7)
    assert report.enqueued == 1
    job = await jobs.claim_next(store, "extract", owner="w", now=clock.now(), lease=timedelta(minutes=1))
    assert job is not None
    assert job.key == str(s.id)


async def test_an_unchanged_file_is_not_parsed_again(store: Store, clock: FakeClock, tmp_path: Path) -> None:
    _session(tmp_path, tmp_path, clock.now() - timedelta(hours=7))
    settings = _settings(tmp_path)
    first = await scan(store, settings, clock)
    assert first.files_parsed == 1
    second = await scan(store, settings, clock)
    assert (second.files_seen, second.files_parsed, second.bytes_parsed) == (1, 0, 0)
    assert second.changed_paths == set()


async def test_appended_bytes_are_parsed_from_the_last_complete_line(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    at = clock.now() - timedelta(hours=1)
    path = _session(tmp_path, tmp_path, at)
    settings = _settings(tmp_path)
    await scan(store, settings, clock)
    size_before = path.stat().st_size
    extra = _user(SID, str(tmp_path), "one more thing", at + timedelta(minutes=5), 9) + "\n"
    partial = _assistant(SID, str(tmp_path), "on it", at, 10)[:40]
    with path.open("a") as f:
        f.write(extra + partial)
    report = await scan(store, settings, clock)
    assert report.files_parsed == 1
    assert report.bytes_parsed == len(extra.encode())  # the partial tail waits
    [s] = report.sessions
    assert s.user_messages == 3
    assert s.last_activity == at + timedelta(minutes=5)
    async with store.read() as conn:
        offset = (await conn.execute(transcripts.select())).first().parsed_offset  # type: ignore[union-attr]
    assert offset == size_before + len(extra.encode())


async def test_an_active_session_turns_eligible_when_its_idle_time_comes(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    _session(tmp_path, tmp_path, clock.now() - timedelta(hours=1))
    settings = _settings(tmp_path)
    [s] = (await scan(store, settings, clock)).sessions
    assert s.state == "active"
    assert s.reason is not None
    assert s.reason.startswith("active: idle at")
    assert s.eligible_at == clock.now() + timedelta(hours=5)
    clock.advance(timedelta(hours=5))
    report = await scan(store, settings, clock)
    assert report.files_parsed == 0
    assert [x.state for x in report.sessions] == ["eligible"]
    assert report.enqueued == 1


async def test_a_session_that_grows_after_extraction_is_eligible_again(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    at = clock.now() - timedelta(hours=7)
    path = _session(tmp_path, tmp_path, at)
    settings = _settings(tmp_path)
    await scan(store, settings, clock)
    async with store.write() as conn:
        await conn.execute(
            update(transcripts).values(state="extracted", extracted_offset=transcripts.c.parsed_offset)
        )
    assert [s.state for s in (await scan(store, settings, clock)).sessions] == ["extracted"]
    with path.open("a") as f:
        f.write(_user(SID, str(tmp_path), "and another", at, 20) + "\n")
    assert [s.state for s in (await scan(store, settings, clock)).sessions] == ["eligible"]


async def test_bad_files_are_listed_with_reasons_and_never_stop_the_scan(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    good = _session(tmp_path, tmp_path, clock.now() - timedelta(hours=7))
    folder = good.parent
    (folder / "empty.jsonl").write_bytes(b"")
    (folder / "binary.jsonl").write_bytes(os.urandom(4096).replace(b"\n", b"x") + b"\n")
    (folder / "array.jsonl").write_text(json.dumps([{"type": "user"}]) + "\n")
    (folder / "nul.jsonl").write_bytes(b"\x00" * 5000 + b"\n")
    os.symlink(folder / "loop.jsonl", folder / "loop.jsonl")
    loop_dir = folder / "sub"
    loop_dir.mkdir()
    os.symlink(folder, loop_dir / "back")
    report = await scan(store, _settings(tmp_path), clock)
    by_name = {Path(s.path).name: s for s in report.sessions}
    assert by_name[good.name].state == "eligible"
    for name in ("empty.jsonl", "binary.jsonl", "array.jsonl", "nul.jsonl", "loop.jsonl"):
        assert name in by_name, name
        assert by_name[name].state in {"unreadable", "skipped", "incomplete"}, name
        assert by_name[name].reason, name
    # A second scan costs a stat per bad file, not a parse.
    assert (await scan(store, _settings(tmp_path), clock)).files_parsed <= 1


async def test_opt_outs_exclusions_and_thresholds(store: Store, clock: FakeClock, tmp_path: Path) -> None:
    at = clock.now() - timedelta(hours=7)
    ignored = _repo(tmp_path / "private")
    (ignored / ".memd-ignore").write_text("")
    _session(tmp_path, ignored, at, sid="11111111-1111-1111-1111-111111111111")
    excluded = _repo(tmp_path / "client-x")
    _session(tmp_path, excluded, at, sid="22222222-2222-2222-2222-222222222222")
    short = _repo(tmp_path / "short")
    _session(tmp_path, short, at, sid="33333333-3333-3333-3333-333333333333", turns=1)
    settings = _settings(tmp_path, exclude_projects=[str(tmp_path / "client-*")], min_user_messages=2)
    reasons = {s.project: (s.state, s.reason or "") for s in (await scan(store, settings, clock)).sessions}
    assert reasons[str(ignored)][0] == "skipped"
    assert ".memd-ignore" in reasons[str(ignored)][1]
    assert "excluded project" in reasons[str(excluded)][1]
    assert "too few user messages" in reasons[str(short)][1]


async def test_changed_settings_are_applied_to_unchanged_files(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    _session(tmp_path, tmp_path, clock.now() - timedelta(hours=2))
    assert [s.state for s in (await scan(store, _settings(tmp_path), clock)).sessions] == ["active"]
    report = await scan(store, _settings(tmp_path, min_rollout_idle_hours=1), clock)
    assert report.files_parsed == 0
    assert [s.state for s in report.sessions] == ["eligible"]


async def test_a_vanished_file_is_marked_gone(store: Store, clock: FakeClock, tmp_path: Path) -> None:
    path = _session(tmp_path, tmp_path, clock.now() - timedelta(hours=7))
    settings = _settings(tmp_path)
    await scan(store, settings, clock)
    path.unlink()
    [s] = (await scan(store, settings, clock)).sessions
    assert (s.state, s.reason) == ("gone", "the file no longer exists")


@pytest.mark.parametrize("missing_root", [True, False])
async def test_a_missing_root_is_an_empty_source(
    store: Store, clock: FakeClock, tmp_path: Path, missing_root: bool
) -> None:
    if not missing_root:
        (tmp_path / "claude").mkdir()
    report = await scan(store, _settings(tmp_path), clock)
    assert report.sessions == []


async def test_a_stale_or_corrupt_scan_index_never_changes_the_outcome(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    from pipeline.scan import index as scan_index

    path = _session(tmp_path, tmp_path, clock.now() - timedelta(hours=1))
    settings = _settings(tmp_path)
    assert [s.state for s in (await scan(store, settings, clock)).sessions] == ["active"]
    index = scan_index.index_path(settings.paths.state_dir)
    assert index.exists()
    # Someone else changed the store behind the index: the index must not be trusted.
    async with store.write() as conn:
        await conn.execute(
            update(transcripts).values(state="extracted", updated_at=clock.now() + timedelta(seconds=1))
        )
    report = await scan(store, settings, clock)
    assert report.files_parsed == 0
    # A corrupt index is read as no index.
    index.write_bytes(b"\x00garbage")
    with path.open("a") as f:
        f.write(_user(SID, str(tmp_path), "more", clock.now(), 30) + "\n")
    report = await scan(store, settings, clock)
    assert report.files_parsed == 1
    assert [s.user_messages for s in report.sessions] == [3]


# -- a file swapped after its stat (issue 13), and one that shrank or was replaced (issue 14) -------


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", ["fifo", "dev_zero"])
async def test_a_transcript_swapped_for_a_fifo_or_dev_zero_after_its_stat_is_unreadable(
    store: Store, clock: FakeClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    path = _session(tmp_path, tmp_path, clock.now() - timedelta(hours=7))
    real_stat_paths = registry_module.stat_paths  # the scan walks an agent's root as its folder says

    def stat_then_swap(paths: Any) -> Any:
        walked = real_stat_paths(paths)
        path.unlink()  # between the scanner's stat and its open
        if kind == "fifo":
            os.mkfifo(path)
        else:
            path.symlink_to("/dev/zero")
        return walked

    monkeypatch.setattr(registry_module, "stat_paths", stat_then_swap)
    report = await scan(store, _settings(tmp_path), clock)
    [s] = report.sessions
    assert s.state == "unreadable"
    assert s.reason == (
        "not a regular file (a FIFO)" if kind == "fifo" else "not a regular file (a character device)"
    )
    assert report.enqueued == 0


def _long_session(path: Path, cwd: Path, at: datetime, turns: range, text: str) -> bytes:
    """Turns long enough that the file outgrows the parser's 4 KB head fingerprint."""
    return b"".join((_user(SID, str(cwd), f"{text} {n} " + "x" * 300, at, n) + "\n").encode() for n in turns)


async def _mark_extracted(store: Store) -> None:
    async with store.write() as conn:
        await conn.execute(
            update(transcripts).values(state="extracted", extracted_offset=transcripts.c.parsed_offset)
        )


async def _offsets(store: Store) -> tuple[int, int, str]:
    async with store.read() as conn:
        row = (await conn.execute(transcripts.select())).one()
    return int(row.parsed_offset), int(row.extracted_offset), str(row.state)


@pytest.mark.parametrize("between", ["unseen", "seen"])
async def test_a_file_truncated_then_grown_again_is_extracted_again_from_the_start(
    store: Store, clock: FakeClock, tmp_path: Path, between: str
) -> None:
    at = clock.now() - timedelta(hours=7)
    path = _session(tmp_path, tmp_path, at)
    path.write_bytes(_long_session(path, tmp_path, at, range(20), "first"))
    settings = _settings(tmp_path)
    await scan(store, settings, clock)
    await _mark_extracted(store)
    old_size = path.stat().st_size
    kept = _long_session(path, tmp_path, at, range(10), "first")
    with path.open("r+b") as f:
        f.truncate(len(kept))
    if between == "seen":  # a scan sees the shorter file before it grows again
        await scan(store, settings, clock)
    with path.open("ab") as f:
        f.write(_long_session(path, tmp_path, at, range(10, 25), "second"))
    assert path.stat().st_size > old_size
    [s] = (await scan(store, settings, clock)).sessions
    assert s.state == "eligible"
    assert s.user_messages == 25
    parsed, extracted, _ = await _offsets(store)
    assert (parsed, extracted) == (path.stat().st_size, 0)


async def test_a_file_replaced_by_a_larger_different_one_is_extracted_again_from_the_start(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    at = clock.now() - timedelta(hours=7)
    path = _session(tmp_path, tmp_path, at)
    settings = _settings(tmp_path)
    await scan(store, settings, clock)
    await _mark_extracted(store)
    other = tmp_path / "other.jsonl"
    other.write_bytes(_long_session(path, tmp_path, at, range(5), "other"))
    os.replace(other, path)
    [s] = (await scan(store, settings, clock)).sessions
    assert s.state == "eligible"
    assert s.user_messages == 5
    parsed, extracted, _ = await _offsets(store)
    assert (parsed, extracted) == (path.stat().st_size, 0)


async def test_an_appended_file_keeps_its_extract_bookkeeping(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    at = clock.now() - timedelta(hours=7)
    path = _session(tmp_path, tmp_path, at)
    path.write_bytes(_long_session(path, tmp_path, at, range(20), "first"))
    settings = _settings(tmp_path)
    await scan(store, settings, clock)
    await _mark_extracted(store)
    extracted_before = path.stat().st_size
    with path.open("ab") as f:
        f.write(_long_session(path, tmp_path, at, range(20, 22), "more"))
    await scan(store, settings, clock)
    parsed, extracted, state = await _offsets(store)
    assert (parsed, extracted, state) == (path.stat().st_size, extracted_before, "eligible")


async def test_two_machines_sharing_a_store_each_record_and_judge_their_own_file_at_one_path(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    from sqlalchemy import select

    from pipeline.scan import index as scan_index
    from tests.conftest import as_machine

    path = _session(tmp_path, tmp_path, clock.now() - timedelta(hours=7))
    base = _settings(tmp_path)

    def on(machine: str) -> Settings:  # each machine has its own state directory (its scan index)
        return base.model_copy(
            update={"paths": base.paths.model_copy(update={"state_dir": tmp_path / f"st-{machine}"})}
        )

    async with as_machine(store, "m1") as one, as_machine(store, "m2") as two:
        [first] = (await scan(one, on("m1"), clock)).sessions
        index_m1 = scan_index.load(scan_index.index_path(on("m1").paths.state_dir))
        [second] = (await scan(two, on("m2"), clock)).sessions
        assert (first.path, second.path) == (str(path), str(path))
        assert first.id != second.id
        assert (first.state, second.state) == ("eligible", "eligible")
        async with store.read() as conn:
            rows = (await conn.execute(select(transcripts.c.machine, transcripts.c.path))).all()
        assert sorted(rows) == [("m1", str(path)), ("m2", str(path))]
        # m2's rows do not move m1's generation: m1's next scan trusts its index and parses nothing.
        again = await scan(one, on("m1"), clock)
        assert (again.files_parsed, [s.id for s in again.sessions]) == (0, [first.id])
        assert index_m1 is not None
        assert scan_index.load(scan_index.index_path(on("m1").paths.state_dir)) == index_m1
        # Each machine claims the extract of its own row only.
        lease = timedelta(minutes=1)
        job = await jobs.claim_next(one, "extract", owner="w1", now=clock.now(), lease=lease)
        assert job is not None
        assert job.key == str(first.id)
        assert await jobs.claim_next(one, "extract", owner="w1", now=clock.now(), lease=lease) is None
        job = await jobs.claim_next(two, "extract", owner="w2", now=clock.now(), lease=lease)
        assert job is not None
        assert job.key == str(second.id)
        # The file going away on m1 is m1's news: m2's row stays as m2 last saw it.
        path.unlink()
        [gone] = (await scan(one, on("m1"), clock)).sessions
        assert gone.state == "gone"
        async with store.read() as conn:
            states = dict((await conn.execute(select(transcripts.c.machine, transcripts.c.state))).all())
        assert states == {"m1": "gone", "m2": "eligible"}

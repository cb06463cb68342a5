"""`memd run --once` in process: exit statuses, what it prints, and what `memd status` then shows.

The real CLI entry point against a SQLite store in tmp_path and the loopback fake Messages API
(tests/daemon/memd_inprocess.py). What needs a whole process (signals, a terminal, the instance
held by another process, a stop that abandons a thread) is in test_run.py.
"""

from __future__ import annotations

import asyncio
import json
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select as sql_select

from daemon.config import load_settings
from daemon.exits import Exit
from pipeline.clock import SystemClock
from pipeline.llm.ratelimit import record_backoff
from pipeline.machine import machine_id
from pipeline.store import kv, open_store
from pipeline.store.read.keys import run_key
from pipeline.store.schema import jobs as jobs_table
from tests.daemon.cli import run_support
from tests.daemon.cli.run_support import batch_env, with_api, with_sessions
from tests.daemon.memd_inprocess import Ran, memd
from tests.fakes.anthropic_api import FakeAnthropicAPI, FakeResponse, RecordedRequest, default_responder
from tests.fakes.anthropic_api import json_message as fake_json_message
from tests.pipeline.extract.support import extract_output


@pytest.fixture
def memd_env(tmp_path: Path) -> dict[str, str]:
    return run_support.memd_env(tmp_path)


def _status(env: dict[str, str], *args: str) -> Ran:
    return memd({**env, "COLUMNS": "400"}, "status", *args)


def _phase1_line(status: str) -> str:
    [line] = [line for line in status.splitlines() if line.startswith("phase 1")]
    return line


def _extract_line(stdout: str) -> str:
    [line] = [line for line in stdout.splitlines() if line.startswith("extract ")]
    return line


def test_run_once_exits_2_on_a_bad_config(tmp_path: Path, memd_env: dict[str, str]) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("[schedule]\nscan_interval_minutes = 0\n")
    done = memd(memd_env, "--config", str(config), "run", "--once")
    assert done.returncode == 2
    assert "schedule.scan_interval_minutes" in done.stderr


def test_run_once_exits_1_when_the_state_store_is_unreachable(memd_env: dict[str, str]) -> None:
    env = {**memd_env, "MEMD_PATHS__STATE_DB": "sqlite:////proc/memd-cannot-write/state.db"}
    done = memd(env, "run", "--once")
    assert done.returncode == 1
    assert "cannot open the state store" in done.stderr


def test_dry_run_needs_once(memd_env: dict[str, str]) -> None:
    assert memd(memd_env, "run", "--dry-run").returncode == Exit.USAGE


def test_run_once_dry_run_lists_what_it_would_extract_without_a_key(memd_env: dict[str, str]) -> None:
    done = memd(with_sessions(memd_env), "run", "--once", "--dry-run")
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "would extract" in out
    assert "0b5c7d7e-2f1a-4c3e-9d41-7a2b9e0c1f11" in out
    assert "rendered tokens" in out
    assert "estimated cost usd" in out
    # ... and the scopes it would consolidate after extracting them, with tokens and cost.
    assert "would consolidate" in out
    scope_rows = [line for line in out.splitlines() if "projects/shop-" in line]
    assert scope_rows
    assert "after extracting 2 sessions" in scope_rows[0]
    assert re.search(r"\b\d+\s+0\.\d{4}\b", scope_rows[0])  # estimated tokens, then the cost
    assert out.strip().splitlines()[-1].startswith("dry run: scan ok, extract ok, consolidate ok")
    # Off a terminal: one line per step, no spinner (test_run.py shows the spinner on a terminal).
    assert "scan..." not in out
    assert "\x1b[" not in out


def test_a_gated_run_once_records_the_gate_starts_nothing_and_exits_0(
    memd_env: dict[str, str], fake_api: FakeAnthropicAPI
) -> None:
    env = with_api(with_sessions(memd_env), fake_api.base_url)
    settings = load_settings(None, env=env).settings
    now = SystemClock().now()
    until = now + timedelta(days=1)  # a run that waited for the reset would outlive the test's timeout

    async def close_the_gate() -> None:
        store = await open_store(settings.paths.state_db)
        try:
            await record_backoff(store, until, "API unavailable (429): rate_limit_error", now=now)
        finally:
            await store.close()

    asyncio.run(close_the_gate())
    done = memd(env, "run", "--once")

    assert done.returncode == 0, done.stderr[-3000:]
    assert fake_api.requests == []  # nothing new started: no message, no batch
    extract = _extract_line(done.stdout)
    assert "gated=True" in extract
    assert "backing off" in extract

    async def recorded() -> tuple[Any, Any, list[str]]:
        store = await open_store(settings.paths.state_db, machine=machine_id(settings.paths.state_dir))
        try:
            async with store.read() as conn:
                states = [
                    row[0]
                    for row in await conn.execute(
                        sql_select(jobs_table.c.state).where(jobs_table.c.kind == "extract")
                    )
                ]
            return (
                await kv.get(store, "phase1_last_run"),
                await kv.get(store, run_key("extract", skipped=False, machine=store.machine)),
                states,
            )
        finally:
            await store.close()

    last_run, step, job_states = asyncio.run(recorded())
    assert last_run["gated"] is True
    assert last_run["claimed"] == 0
    assert last_run["gate_reset_at"] == until.isoformat()
    assert step["outcome"] == "ok"
    assert job_states == ["pending"] * 3  # the sessions wait for the reset, none failed


def test_status_says_when_the_last_run_once_ran(memd_env: dict[str, str]) -> None:
    done = memd(memd_env, "run", "--once")
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(_status(memd_env, "--json").stdout)
    last = report["last_once"]
    assert last["summary"] == done.stdout.strip().splitlines()[-1]
    assert last["finished_at"] is not None
    assert last["pid"] > 0
    human = _status(memd_env).stdout
    assert "never started" not in human
    assert re.search(r"last run --once\s+\S+ .*scan ok", human), human


def test_run_once_with_an_unreachable_api_fails_and_names_it(memd_env: dict[str, str]) -> None:
    env = with_api(with_sessions(memd_env), "http://127.0.0.1:9")
    done = memd(env, "run", "--once")
    assert done.returncode == 1, done.stdout + done.stderr[-3000:]
    extract = _extract_line(done.stdout)
    assert re.match(r"extract\s+failed", extract)
    assert extract.endswith("(reason below)")
    # the reason once in the whole output (issue 36), on stderr's failure line
    assert (done.stdout + done.stderr).count("http://127.0.0.1:9") == 1, done.stdout + done.stderr
    assert "memd: extract failed: " in done.stderr
    assert "http://127.0.0.1:9" in done.stderr
    assert "extract failed" in done.stdout.strip().splitlines()[-1]
    phase1 = _phase1_line(_status(env).stdout)
    assert "failed" in phase1
    assert "http://127.0.0.1:9" in phase1
    # An API that cannot be reached did not ask memd to wait: the next run tries again and says
    # the same, instead of a gate that reads as "ok".
    again = memd(env, "run", "--once")
    assert again.returncode == 1, again.stdout + again.stderr[-3000:]
    assert re.match(r"extract\s+failed", _extract_line(again.stdout))
    assert "http://127.0.0.1:9" in again.stderr


def test_run_once_with_a_refused_key_fails_and_names_the_api(
    memd_env: dict[str, str], fake_api: FakeAnthropicAPI
) -> None:
    fake_api.expected_key = "another-key"
    env = with_api(with_sessions(memd_env), fake_api.base_url)
    done = memd(env, "run", "--once")
    assert done.returncode == 1
    assert re.match(r"extract\s+failed", _extract_line(done.stdout))
    assert fake_api.base_url in done.stderr
    assert "401" in done.stderr
    assert (done.stdout + done.stderr).count(fake_api.base_url) == 1, done.stdout + done.stderr
    phase1 = _phase1_line(_status(env).stdout)
    assert "failed" in phase1
    assert "401" in phase1


def test_run_once_with_a_model_that_does_not_exist_fails_and_keeps_the_sessions(
    memd_env: dict[str, str], fake_api: FakeAnthropicAPI
) -> None:
    from tests.fakes.anthropic_api import bad_request

    fake_api.responder = lambda body, headers: bad_request(f"model: {body['model']}", 404)
    env = {**with_api(with_sessions(memd_env), fake_api.base_url), "MEMD_LLM__EXTRACT_MODEL": "claude-nope-1"}
    done = memd(env, "run", "--once")
    assert done.returncode == 1
    extract = _extract_line(done.stdout)
    assert re.match(r"extract\s+failed", extract)
    assert "claude-nope-1" in done.stderr
    assert "failed=" not in extract  # no session is blamed for the model
    phase1 = _phase1_line(_status(env).stdout)
    assert "failed" in phase1
    assert "claude-nope-1" in phase1


def test_a_run_once_that_only_submits_a_batch_says_so_and_status_shows_it_pending(
    memd_env: dict[str, str], fake_api: FakeAnthropicAPI
) -> None:
    env = batch_env(memd_env, fake_api)
    done = memd(env, "run", "--once")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "batches_pending=1" in _extract_line(done.stdout)
    assert "collected by a later cycle" in done.stdout
    phase1 = _phase1_line(_status(env).stdout)
    assert "1 batch pending" in phase1
    assert "3 sessions" in phase1


class EndOnSecondPoll:
    """The fake API's interceptor: the batch is seen running by memd's first poll of it, and ends
    (its entries answered with valid extracts) just before the second poll is answered."""

    def __init__(self, fake_api: FakeAnthropicAPI) -> None:
        self.fake_api = fake_api
        self.polls = 0

    def __call__(self, request: RecordedRequest) -> FakeResponse | None:
        [batch_id] = list(self.fake_api.batches) or [None]
        if batch_id is None or request.method != "GET" or batch_id not in request.path:
            return None
        self.polls += 1
        if self.polls == 2:
            self.fake_api.responder = lambda body, headers: fake_json_message(extract_output())
            self.fake_api.end_batch(batch_id)
            self.fake_api.responder = default_responder
        return None


def test_run_once_wait_waits_for_the_batch_then_finishes_the_cycle(
    memd_env: dict[str, str], fake_api: FakeAnthropicAPI
) -> None:
    env = batch_env(memd_env, fake_api)
    ending = EndOnSecondPoll(fake_api)
    fake_api.interceptor = ending
    done = memd(env, "run", "--once", "--wait", "--wait-poll", "0.2")
    stdout = done.stdout
    assert ending.polls >= 2  # memd saw the batch running, then ended
    # The fake's default reply is no valid consolidation, so consolidate fails (exit 1): what
    # matters here is that it ran on the extracts the wait collected.
    assert "waiting for 1 batch with 3 sessions" in stdout, stdout + done.stderr[-3000:]
    submitted, collected = [line for line in stdout.splitlines() if line.startswith("extract ")]
    assert "batches_submitted=1" in submitted
    assert "extracted=3" in collected
    assert re.search(r"^consolidate\s+\S+.*scopes=2", stdout, re.M), stdout  # it consolidated the extracts
    assert re.search(r"^publish\s+ok", stdout, re.M), stdout
    assert "gave up" not in stdout
    assert "collected by a later cycle" not in stdout
    status = _status(env).stdout
    assert "pending" not in _phase1_line(status)
    assert "batches" not in [line.split()[0] for line in status.splitlines() if line.strip()]


def test_run_once_wait_gives_up_at_its_limit_and_says_what_is_pending(
    memd_env: dict[str, str], fake_api: FakeAnthropicAPI
) -> None:
    env = batch_env(memd_env, fake_api)
    done = memd(env, "run", "--once", "--wait", "--wait-timeout", "1", "--wait-poll", "0.2")
    assert done.returncode == 1, done.stdout + done.stderr[-3000:]
    assert "waiting for 1 batch with 3 sessions" in done.stdout
    assert "gave up waiting after 1s: 1 batch pending with 3 sessions" in done.stdout
    assert re.search(r"^publish\s+", done.stdout, re.M)  # the cycle still ran to its end
    [batches] = [line for line in _status(env).stdout.splitlines() if line.startswith("batches")]
    assert "1 pending with 3 sessions" in batches


CODEX_ROLLOUT = (
    Path(__file__).parents[2]
    / "fixtures/transcripts/codex/sessions/2026/09/21/rollout-2026-09-21T10-00-00-019a0f01-0000-7000-8000-000000000c0e.jsonl"
)


def _with_codex_session(env: dict[str, str]) -> dict[str, str]:
    day = Path(env["MEMD_SOURCES__CODEX__ROOT"]) / "2026" / "09" / "21"
    day.mkdir(parents=True)
    (day / CODEX_ROLLOUT.name).write_bytes(CODEX_ROLLOUT.read_bytes())
    return env


def test_the_first_run_with_codex_sessions_says_once_how_to_switch_codex_on(memd_env: dict[str, str]) -> None:
    """Issue 36: Codex gets nothing by default; the first run on a machine with Codex sessions says
    so, and how to change it, once (remembered in the store)."""
    env = _with_codex_session(memd_env)
    first = memd(env, "run", "--once")
    assert first.returncode == 0, first.stdout + first.stderr[-3000:]
    said = first.stdout + first.stderr
    assert said.count("Codex sessions were found here") == 1, said
    assert "[publish] codex_global = true" in first.stdout
    assert "[features] memories = true" in first.stdout
    again = memd(env, "run", "--once")
    assert "Codex sessions were found here" not in again.stdout + again.stderr


def test_no_codex_hint_without_codex_sessions_or_with_codex_on(memd_env: dict[str, str]) -> None:
    quiet = memd(memd_env, "run", "--once")
    assert "Codex sessions" not in quiet.stdout + quiet.stderr
    on = memd({**_with_codex_session(memd_env), "MEMD_PUBLISH__CODEX_GLOBAL": "true"}, "run", "--once")
    assert on.returncode == 0, on.stdout + on.stderr[-3000:]
    assert "Codex sessions" not in on.stdout + on.stderr

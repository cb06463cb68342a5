"""`memd run` as the service runs it: a real subprocess, a fake NOTIFY_SOCKET, real signals."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import re
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
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
from pipeline.store.readmodel import run_key
from pipeline.store.schema import jobs as jobs_table
from tests.daemon.memd_process import EXIT_TIMEOUT_S, Memd
from tests.fakes.anthropic_api import FakeAnthropicAPI, default_responder
from tests.fakes.anthropic_api import json_message as fake_json_message
from tests.fakes.fixtures import FAKE_API_KEY
from tests.pipeline.extract.support import extract_output


@pytest.fixture
def memd_env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    roots = home / "roots"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMD_", "XDG_", "NOTIFY_", "WATCHDOG_"))}
    env.pop("ANTHROPIC_API_KEY", None)
    env.update(
        {
            "HOME": str(home),
            "MEMD_SOURCES__CLAUDE_CODE__ROOT": str(roots / "claude"),
            "MEMD_SOURCES__CODEX__ROOT": str(roots / "codex"),
            "MEMD_SOURCES__GEMINI_CLI__ROOT": str(roots / "gemini"),
            "MEMD_SOURCES__PI__ROOT": str(roots / "pi"),
        }
    )
    (roots / "claude").mkdir(parents=True)
    return env


@pytest.fixture
def started(tmp_path: Path) -> Iterator[list[Memd]]:
    procs: list[Memd] = []
    yield procs
    for p in procs:
        p.close()


def start(started: list[Memd], tmp_path: Path, env: dict[str, str], *args: str) -> Memd:
    proc = Memd(tmp_path, f"memd{len(started)}", env, *args)
    started.append(proc)
    return proc


def test_ready_then_sigterm_stops_cleanly(
    tmp_path: Path, memd_env: dict[str, str], started: list[Memd]
) -> None:
    memd = start(started, tmp_path, {**memd_env, "WATCHDOG_USEC": "2000000"}, "run")
    ready = memd.wait_for("READY=1")
    assert "STATUS=" in ready
    memd.wait_for("WATCHDOG=1")
    memd.wait_for("STATUS=idle; last cycle")  # the first cycle ran (scan at start)
    memd.signal(signal.SIGTERM)
    memd.wait_for("STOPPING=1")
    assert memd.wait() == 0
    assert '"event": "released"' in memd.stderr()


def test_sigint_also_stops_cleanly(tmp_path: Path, memd_env: dict[str, str], started: list[Memd]) -> None:
    memd = start(started, tmp_path, memd_env, "run")
    memd.wait_for("READY=1")
    memd.signal(signal.SIGINT)
    assert memd.wait() == 0


def test_a_second_instance_is_refused_and_names_the_holder(
    tmp_path: Path, memd_env: dict[str, str], started: list[Memd]
) -> None:
    first = start(started, tmp_path, memd_env, "run")
    first.wait_for("READY=1")
    second = subprocess.run(
        [sys.executable, "-m", "daemon", "run"],
        env=memd_env,
        capture_output=True,
        text=True,
        timeout=EXIT_TIMEOUT_S,
    )
    assert second.returncode == Exit.BUSY
    assert f"pid {first.proc.pid}" in second.stderr
    assert f"host {socket.gethostname()}" in second.stderr
    once = subprocess.run(
        [sys.executable, "-m", "daemon", "run", "--once"],
        env=memd_env,
        capture_output=True,
        text=True,
        timeout=EXIT_TIMEOUT_S,
    )
    assert once.returncode == Exit.BUSY
    first.signal(signal.SIGTERM)
    assert first.wait() == 0


def test_an_instance_killed_with_sigkill_is_taken_over_at_once(
    tmp_path: Path, memd_env: dict[str, str], started: list[Memd]
) -> None:
    first = start(started, tmp_path, memd_env, "run")
    first.wait_for("READY=1")
    first.proc.kill()
    first.wait()
    t0 = time.monotonic()
    second = start(started, tmp_path, memd_env, "run")
    second.wait_for("READY=1")
    # The dead instance's lease would only expire after two minutes: this start did not wait for it.
    assert time.monotonic() - t0 < 100
    assert "instance_taken_over" in second.stderr()
    second.signal(signal.SIGTERM)
    assert second.wait() == 0


def test_sighup_with_a_bad_file_keeps_the_old_settings_and_runs_on(
    tmp_path: Path, memd_env: dict[str, str], started: list[Memd]
) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[schedule]\nscan_interval_minutes = 5\n")
    memd = start(started, tmp_path, memd_env, "--config", str(config), "run")
    memd.wait_for("READY=1")
    config.write_text("[schedule]\nscan_interval_minutes = -1\n")
    memd.signal(signal.SIGHUP)
    failed = memd.wait_for("STATUS=settings reload failed")
    assert "scan_interval_minutes" in failed
    config.write_text("[schedule]\nscan_interval_minutes = 7\n")
    memd.signal(signal.SIGHUP)
    memd.wait_for("STATUS=settings reloaded")
    assert memd.proc.poll() is None
    memd.signal(signal.SIGTERM)
    assert memd.wait() == 0
    assert "settings_reload_failed" in memd.stderr()


def _once(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "daemon", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=EXIT_TIMEOUT_S * 3,
    )


def test_run_once_exits_2_on_a_bad_config(tmp_path: Path, memd_env: dict[str, str]) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("[schedule]\nscan_interval_minutes = 0\n")
    done = _once(memd_env, "--config", str(config), "run", "--once")
    assert done.returncode == 2
    assert "schedule.scan_interval_minutes" in done.stderr
    assert "Traceback" not in done.stderr


def test_run_once_exits_1_when_the_state_store_is_unreachable(memd_env: dict[str, str]) -> None:
    done = _once(
        {**memd_env, "MEMD_PATHS__STATE_DB": "sqlite:////proc/memd-cannot-write/state.db"}, "run", "--once"
    )
    assert done.returncode == 1
    assert "cannot open the state store" in done.stderr
    assert "Traceback" not in done.stderr


def test_dry_run_needs_once(memd_env: dict[str, str]) -> None:
    done = _once(memd_env, "run", "--dry-run")
    assert done.returncode == Exit.USAGE


def with_sessions(memd_env: dict[str, str]) -> dict[str, str]:
    """The fixture Claude Code sessions under the source root, all of them idle and recent enough."""
    fixtures = Path(__file__).parents[2] / "fixtures" / "transcripts" / "claude_code" / "projects"
    root = Path(memd_env["MEMD_SOURCES__CLAUDE_CODE__ROOT"])
    for src in fixtures.rglob("*"):
        if src.is_file():
            dest = root / src.relative_to(fixtures)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(src.read_bytes())
    return {
        **memd_env,
        "MEMD_MEMORIES__MIN_ROLLOUT_IDLE_HOURS": "0",
        "MEMD_MEMORIES__MAX_ROLLOUT_AGE_DAYS": "36500",
    }


def test_run_once_dry_run_lists_what_it_would_extract_without_a_key(memd_env: dict[str, str]) -> None:
    done = _once(with_sessions(memd_env), "run", "--once", "--dry-run")
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


def test_a_gated_run_once_records_the_gate_starts_nothing_and_exits_0(
    memd_env: dict[str, str], fake_api: FakeAnthropicAPI
) -> None:
    env = {
        **with_sessions(memd_env),
        "ANTHROPIC_API_KEY": FAKE_API_KEY,
        "MEMD_LLM__BASE_URL": fake_api.base_url,
        "MEMD_LLM__BATCH": "off",
    }
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
    done = _once(env, "run", "--once")

    assert done.returncode == 0, done.stderr[-3000:]
    assert fake_api.requests == []  # nothing new started: no message, no batch
    [extract] = [line for line in done.stdout.splitlines() if line.startswith("extract ")]
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


def test_run_once_on_a_terminal_shows_progress(memd_env: dict[str, str]) -> None:
    env = {**with_sessions(memd_env), "TERM": "xterm", "COLUMNS": "160"}
    env.pop("NO_COLOR", None)
    env.pop("FORCE_COLOR", None)
    code, screen = run_on_a_terminal(env, "run", "--once", "--dry-run")
    assert code == 0, screen[-3000:]
    # A spinner names each step while it runs, then one line per step stays.
    for step in ("scan", "extract", "consolidate", "publish"):
        assert f"{step}..." in screen
        assert re.search(rf"^{step}\s+ok\s+\d+\.\ds", screen, re.MULTILINE), step
    assert "\x1b[?25l" in screen  # the cursor hidden while the spinner runs
    assert "step_started" not in screen  # INFO logs do not drown the progress on a terminal
    # Off a terminal: the same lines, no spinner.
    plain = _once(with_sessions(memd_env), "run", "--once", "--dry-run").stdout
    assert "scan..." not in plain
    assert "\x1b[" not in plain


def run_on_a_terminal(env: dict[str, str], *args: str) -> tuple[int, str]:
    """Run memd with a pseudo-terminal as stdin, stdout and stderr; its exit status and what it drew."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "daemon", *args], stdin=slave, stdout=slave, stderr=slave, env=env
    )
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + EXIT_TIMEOUT_S * 3
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], deadline - time.monotonic())
            if not ready:
                break
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        code = proc.wait(timeout=EXIT_TIMEOUT_S)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    screen = b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
    return code, re.sub(r"\x1b\[1A\x1b\[2K|\r\x1b\[2K|\r", "\n", screen)


# A step that does not return: shown stuck, and no signal leaves the process behind -----------------

SHUTDOWN_TIMEOUT_S = 2.0
EXIT_BOUND_S = SHUTDOWN_TIMEOUT_S + 10  # shutdown_timeout_s plus a few seconds (and a loaded machine)


def blocking(memd_env: dict[str, str], **extra: str) -> dict[str, str]:
    return {
        **memd_env,
        "MEMD_SCHEDULE__SHUTDOWN_TIMEOUT_S": str(SHUTDOWN_TIMEOUT_S),
        "MEMD_SCHEDULE__STEP_DEADLINE_MINUTES": "0.02",  # 1.2 s
        **extra,
    }


def memd_status(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return _once({**env, "COLUMNS": "200"}, "status", *args)


def wait_for_stderr(memd: Memd, text: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while text not in memd.stderr():
        assert time.monotonic() < deadline, f"no {text!r} in stderr:\n{memd.stderr()[-3000:]}"
        assert memd.proc.poll() is None, memd.stderr()[-3000:]
        time.sleep(0.1)


def exits_within(proc: subprocess.Popen[Any], seconds: float) -> tuple[int, float]:
    t0 = time.monotonic()
    try:
        code = proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running {seconds:.0f}s after the signal")
    return code, time.monotonic() - t0


@pytest.mark.slow
def test_a_step_blocked_in_a_thread_is_shown_stuck_and_sigterm_still_ends_the_process(
    tmp_path: Path, memd_env: dict[str, str], started: list[Memd]
) -> None:
    env = blocking(memd_env)
    memd = Memd(tmp_path, "blocked", env, "scan", "thread", "run", module="tests.daemon.blocking_memd")
    started.append(memd)
    memd.wait_for("READY=1")
    wait_for_stderr(memd, "blocking scan")
    deadline = time.monotonic() + 30
    while True:
        done = memd_status(env, "--json")
        report = json.loads(done.stdout)
        if report["daemon"]["state"] == "stuck" or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert report["daemon"]["state"] == "stuck", report["daemon"]
    assert done.returncode == Exit.STUCK
    assert report["daemon"]["stuck_step"]["step"] == "scan"
    assert report["daemon"]["stuck_step"]["running_s"] >= 1.2
    human = memd_status(env)
    assert human.returncode == Exit.STUCK
    assert re.search(r"daemon stuck .*scan has run for \d+s", human.stdout), human.stdout

    memd.signal(signal.SIGTERM)
    code, took = exits_within(memd.proc, EXIT_BOUND_S)
    assert code == 0, memd.stderr()[-3000:]
    assert "shutdown_cancelling_work" in memd.stderr()
    after = json.loads(memd_status(env, "--json").stdout)
    assert after["daemon"]["state"] == "stopped"  # the stop was recorded, the instance released
    assert after["leases"] == []


@pytest.mark.slow
def test_a_step_blocking_the_event_loop_still_ends_on_sigterm(
    tmp_path: Path, memd_env: dict[str, str], started: list[Memd]
) -> None:
    memd = Memd(
        tmp_path, "loop", blocking(memd_env), "scan", "loop", "run", module="tests.daemon.blocking_memd"
    )
    started.append(memd)
    memd.wait_for("READY=1")
    wait_for_stderr(memd, "blocking scan")
    memd.signal(signal.SIGTERM)
    code, _ = exits_within(memd.proc, EXIT_BOUND_S)
    assert code != 0  # nothing could be released: not a clean stop
    assert "shutdown_overran" in memd.stderr()


# Ctrl-C during `memd run --once` -----------------------------------------------------------------


class Once:
    """`memd run --once` with one step blocked, its stdout read line by line as it comes."""

    def __init__(self, env: dict[str, str], step: str, how: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.daemon.blocking_memd", step, how, "run", "--once"],
            env=env,
            cwd=Path(__file__).parents[3],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []

    def line_with(self, text: str, timeout_s: float = 60) -> str:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], deadline - time.monotonic())
            if not ready:
                break
            line = self.proc.stdout.readline()
            if not line:
                break
            self.lines.append(line)
            if text in line:
                return line
        pytest.fail(f"no {text!r} on stdout; so far: {self.lines}")

    def rest(self) -> tuple[str, str]:
        out, err = self.proc.communicate(timeout=EXIT_TIMEOUT_S)
        return "".join(self.lines) + out, err

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def onces() -> Iterator[list[Once]]:
    found: list[Once] = []
    yield found
    for once in found:
        once.close()


@pytest.mark.slow
def test_ctrl_c_during_run_once_says_what_it_waits_for_and_names_the_skipped_steps(
    memd_env: dict[str, str], onces: list[Once]
) -> None:
    env = blocking(memd_env, MEMD_SCHEDULE__SHUTDOWN_TIMEOUT_S="30")
    once = Once(env, "extract", "sleep:3")
    onces.append(once)
    once.line_with("scan ")
    time.sleep(0.5)  # extract is under way
    t0 = time.monotonic()
    once.proc.send_signal(signal.SIGINT)
    notice = once.line_with("interrupted", timeout_s=2)
    assert time.monotonic() - t0 < 2  # at once, not when the step is done
    assert "extract" in notice
    assert "30s" in notice
    assert "Ctrl-C again" in notice
    out, err = once.rest()
    summary = out.strip().splitlines()[-1]
    assert summary.startswith("scan ok, extract ok"), out
    assert "consolidate skipped: interrupted" in summary
    assert "publish skipped: interrupted" in summary


@pytest.mark.slow
def test_a_second_ctrl_c_abandons_the_step_and_still_reports_what_ran(
    memd_env: dict[str, str], onces: list[Once]
) -> None:
    env = blocking(memd_env, MEMD_SCHEDULE__SHUTDOWN_TIMEOUT_S="30")
    once = Once(env, "extract", "thread")
    onces.append(once)
    once.line_with("scan ")
    time.sleep(0.5)
    once.proc.send_signal(signal.SIGINT)
    once.line_with("interrupted", timeout_s=2)
    once.proc.send_signal(signal.SIGINT)
    once.line_with("abandon", timeout_s=2)
    code, _ = exits_within(once.proc, 10)  # the thread stuck in its read does not keep it alive
    out, err = once.rest()
    summary = out.strip().splitlines()[-1]
    assert "nothing ran" not in out
    assert summary.startswith("scan ok, extract cancelled"), out
    assert "publish skipped: interrupted" in summary
    assert code == 1  # a step was cut short


def test_status_says_when_the_last_run_once_ran(memd_env: dict[str, str]) -> None:
    done = _once(memd_env, "run", "--once")
    assert done.returncode == 0, done.stderr[-3000:]
    status = memd_status(memd_env, "--json")
    report = json.loads(status.stdout)
    last = report["last_once"]
    assert last["summary"] == done.stdout.strip().splitlines()[-1]
    assert last["finished_at"] is not None
    assert last["pid"] > 0
    human = memd_status(memd_env).stdout
    assert "never started" not in human
    assert re.search(r"last run --once\s+\S+ .*scan ok", human), human


def _status(env: dict[str, str]) -> str:
    return _once({**env, "COLUMNS": "400"}, "status").stdout


def _phase1_line(status: str) -> str:
    [line] = [line for line in status.splitlines() if line.startswith("phase 1")]
    return line


def test_run_once_with_an_unreachable_api_fails_and_names_it(memd_env: dict[str, str]) -> None:
    env = {
        **with_sessions(memd_env),
        "ANTHROPIC_API_KEY": FAKE_API_KEY,
        "MEMD_LLM__BASE_URL": "http://127.0.0.1:9",
        "MEMD_LLM__BATCH": "off",
    }
    done = _once(env, "run", "--once")
    assert done.returncode == 1, done.stdout + done.stderr[-3000:]
    [extract] = [line for line in done.stdout.splitlines() if line.startswith("extract ")]
    assert re.match(r"extract\s+failed", extract)
    assert "http://127.0.0.1:9" in extract
    assert "extract failed" in done.stdout.strip().splitlines()[-1]
    phase1 = _phase1_line(_status(env))
    assert "failed" in phase1
    assert "http://127.0.0.1:9" in phase1
    # An API that cannot be reached did not ask memd to wait: the next run tries again and says
    # the same, instead of a gate that reads as "ok".
    again = _once(env, "run", "--once")
    assert again.returncode == 1, again.stdout + again.stderr[-3000:]
    [extract] = [line for line in again.stdout.splitlines() if line.startswith("extract ")]
    assert re.match(r"extract\s+failed", extract)
    assert "http://127.0.0.1:9" in extract


def test_run_once_with_a_refused_key_fails_and_names_the_api(
    memd_env: dict[str, str], fake_api: FakeAnthropicAPI
) -> None:
    fake_api.expected_key = "another-key"
    env = {
        **with_sessions(memd_env),
        "ANTHROPIC_API_KEY": FAKE_API_KEY,
        "MEMD_LLM__BASE_URL": fake_api.base_url,
        "MEMD_LLM__BATCH": "off",
    }
    done = _once(env, "run", "--once")
    assert done.returncode == 1
    [extract] = [line for line in done.stdout.splitlines() if line.startswith("extract ")]
    assert re.match(r"extract\s+failed", extract)
    assert fake_api.base_url in extract
    assert "401" in extract
    phase1 = _phase1_line(_status(env))
    assert "failed" in phase1
    assert "401" in phase1


def test_run_once_with_a_model_that_does_not_exist_fails_and_keeps_the_sessions(
    memd_env: dict[str, str], fake_api: FakeAnthropicAPI
) -> None:
    from tests.fakes.anthropic_api import bad_request

    fake_api.responder = lambda body, headers: bad_request(f"model: {body['model']}", 404)
    env = {
        **with_sessions(memd_env),
        "ANTHROPIC_API_KEY": FAKE_API_KEY,
        "MEMD_LLM__BASE_URL": fake_api.base_url,
        "MEMD_LLM__BATCH": "off",
        "MEMD_LLM__EXTRACT_MODEL": "claude-nope-1",
    }
    done = _once(env, "run", "--once")
    assert done.returncode == 1
    [extract] = [line for line in done.stdout.splitlines() if line.startswith("extract ")]
    assert re.match(r"extract\s+failed", extract)
    assert "claude-nope-1" in extract
    assert "failed=" not in extract  # no session is blamed for the model
    phase1 = _phase1_line(_status(env))
    assert "failed" in phase1
    assert "claude-nope-1" in phase1


def test_a_run_once_that_only_submits_a_batch_says_so_and_status_shows_it_pending(
    memd_env: dict[str, str], fake_api: FakeAnthropicAPI
) -> None:
    fake_api.auto_end_batches = False
    env = {
        **with_sessions(memd_env),
        "ANTHROPIC_API_KEY": FAKE_API_KEY,
        "MEMD_LLM__BASE_URL": fake_api.base_url,
        "MEMD_LLM__BATCH": "on",
    }
    done = _once(env, "run", "--once")
    assert done.returncode == 0, done.stderr[-3000:]
    [extract] = [line for line in done.stdout.splitlines() if line.startswith("extract ")]
    assert "batches_pending=1" in extract
    assert "collected by a later cycle" in done.stdout
    phase1 = _phase1_line(_status(env))
    assert "1 batch pending" in phase1
    assert "3 sessions" in phase1


def _batch_env(memd_env: dict[str, str], fake_api: FakeAnthropicAPI) -> dict[str, str]:
    fake_api.auto_end_batches = False
    return {
        **with_sessions(memd_env),
        "ANTHROPIC_API_KEY": FAKE_API_KEY,
        "MEMD_LLM__BASE_URL": fake_api.base_url,
        "MEMD_LLM__BATCH": "on",
    }


def test_run_once_wait_waits_for_the_batch_then_finishes_the_cycle(
    memd_env: dict[str, str], fake_api: FakeAnthropicAPI
) -> None:
    env = _batch_env(memd_env, fake_api)
    args = [sys.executable, "-m", "daemon", "run", "--once", "--wait", "--wait-poll", "0.2"]
    with subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        deadline = time.monotonic() + EXIT_TIMEOUT_S * 3
        while not fake_api.batches and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        [batch_id] = list(fake_api.batches)
        time.sleep(0.5)  # memd polls at least once while the batch runs
        fake_api.responder = lambda body, headers: fake_json_message(extract_output())
        fake_api.end_batch(batch_id)  # its entries answered with valid extracts
        fake_api.responder = default_responder
        try:
            stdout, stderr = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
            raise AssertionError(stdout + stderr[-3000:]) from None
    # The fake's default reply is no valid consolidation, so consolidate fails (exit 1): what
    # matters here is that it ran on the extracts the wait collected.
    assert "waiting for 1 batch with 3 sessions" in stdout, stdout + stderr[-3000:]
    submitted, collected = [line for line in stdout.splitlines() if line.startswith("extract ")]
    assert "batches_submitted=1" in submitted
    assert "extracted=3" in collected
    assert re.search(r"^consolidate\s+\S+.*scopes=2", stdout, re.M), stdout  # it consolidated the extracts
    assert re.search(r"^publish\s+ok", stdout, re.M), stdout
    assert "gave up" not in stdout
    assert "collected by a later cycle" not in stdout
    phase1 = _phase1_line(_status(env))
    assert "pending" not in phase1
    assert "batches" not in [line.split()[0] for line in _status(env).splitlines() if line.strip()]


def test_run_once_wait_gives_up_at_its_limit_and_says_what_is_pending(
    memd_env: dict[str, str], fake_api: FakeAnthropicAPI
) -> None:
    env = _batch_env(memd_env, fake_api)
    done = _once(env, "run", "--once", "--wait", "--wait-timeout", "1", "--wait-poll", "0.2")
    assert done.returncode == 1, done.stdout + done.stderr[-3000:]
    assert "waiting for 1 batch with 3 sessions" in done.stdout
    assert "gave up waiting after 1s: 1 batch pending with 3 sessions" in done.stdout
    assert re.search(r"^publish\s+", done.stdout, re.M)  # the cycle still ran to its end
    [batches] = [line for line in _status(env).splitlines() if line.startswith("batches")]
    assert "1 pending with 3 sessions" in batches


def test_ctrl_c_while_run_once_waits_for_batches_stops_waiting_and_names_the_skipped_steps(
    memd_env: dict[str, str], fake_api: FakeAnthropicAPI
) -> None:
    env = _batch_env(memd_env, fake_api)
    args = [sys.executable, "-m", "daemon", "run", "--once", "--wait", "--wait-poll", "0.2"]
    with subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        seen = ""
        while "waiting for 1 batch" not in seen and proc.poll() is None:
            seen += proc.stdout.readline()
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=EXIT_TIMEOUT_S)
    stdout = seen + stdout
    assert "interrupted: no further step will run" in stdout, stdout + stderr[-3000:]
    assert "consolidate skipped: interrupted, publish skipped: interrupted" in stdout
    assert "1 batch pending with 3 sessions: the results will be collected by a later cycle" in stdout
    assert "gave up" not in stdout

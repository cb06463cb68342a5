"""`memd run` as the service runs it: a real subprocess, a fake NOTIFY_SOCKET, real signals.

Only what needs a whole process is here: signals, the instance held by another process, a
terminal, a stop that must end the process although a thread will not. `memd run --once`'s exit
statuses and output are checked in process (test_run_once.py)."""

from __future__ import annotations

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
from pathlib import Path
from typing import Any

import pytest

from daemon.exits import Exit
from tests.daemon.cli import run_support
from tests.daemon.cli.run_support import batch_env, with_sessions
from tests.daemon.cli.startup import imported
from tests.daemon.memd_inprocess import Ran, memd
from tests.daemon.memd_process import EXIT_TIMEOUT_S, Memd
from tests.fakes.anthropic_api import FakeAnthropicAPI


@pytest.fixture
def memd_env(tmp_path: Path) -> dict[str, str]:
    return run_support.memd_env(tmp_path)


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


IDLE_LOADS = ("sqlalchemy", "apscheduler", "watchfiles", "pipeline.scan.scanner", "pipeline.publish.run")
"""What an idle daemon uses (its store, its scheduler, its watcher, the scan and the publish of each cycle)."""
IDLE_NEVER_LOADS = (
    # what a phase with work loads: the model client and its SDKs, the redaction engine, the
    # consolidation and extraction machinery, sync, a transcript parser (no file changed)
    "anthropic",
    "openai",
    "httpx",
    "httpx2",
    "pipeline.llm",
    "pipeline.redaction",
    "ahocorasick_rs",
    "pipeline.extract",
    "pipeline.consolidate.run",
    "pipeline.consolidate.scope_run",
    "pipeline.sync",
    "pipeline.sources._collector",
    "pipeline.agents.claude_code.transcripts",
    "pipeline.agents.codex.transcripts",
    # what other commands or settings load: the page, the MCP server, migrations' alembic,
    # PostgreSQL's dialect on a SQLite store, pydantic
    "daemon.ui",
    "starlette",
    "uvicorn",
    "daemon.mcp",
    "mcp",
    "alembic",
    "sqlalchemy.dialects.postgresql",
    "asyncpg",
    "pydantic",
    # what the daemon does without: rich and colorama (structlog.dev takes them when it can)
    "rich",
    "pygments",
    "colorama",
)


def test_an_idle_daemon_has_imported_only_what_it_uses(
    tmp_path: Path, memd_env: dict[str, str], started: list[Memd]
) -> None:
    """Issue 34: an idle `memd run` carries its imports for the rest of its life (its memory is
    mostly its modules): what a phase needs is loaded when the phase has work."""
    report = tmp_path / "modules.json"
    memd = Memd(tmp_path, "idle", memd_env, str(report), "run", module="tests.daemon.modules_memd")
    started.append(memd)
    memd.wait_for("STATUS=idle; last cycle")  # the first cycle ran (scan at start)
    memd.signal(signal.SIGUSR1)
    deadline = time.monotonic() + EXIT_TIMEOUT_S
    while not report.exists() and time.monotonic() < deadline and memd.proc.poll() is None:
        time.sleep(0.05)
    assert report.exists(), memd.stderr()[-3000:]
    modules = set(json.loads(report.read_text()))
    assert all(name in modules for name in IDLE_LOADS), sorted(set(IDLE_LOADS) - modules)
    loaded = sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in IDLE_NEVER_LOADS))
    assert loaded == []
    memd.signal(signal.SIGTERM)
    assert memd.wait() == 0


ONCE_NEVER_LOADS = ("apscheduler", "watchfiles")
"""What `memd run --once` does without: the service's scheduler and its watcher (issue 34)."""


def test_a_run_once_imports_neither_the_scheduler_nor_the_watcher(memd_env: dict[str, str]) -> None:
    done = imported(["run", "--once"], memd_env, timeout_s=EXIT_TIMEOUT_S)
    assert "daemon.service.once" in done.modules, done.stderr[-3000:]  # the one-shot cycle ran
    assert done.loaded(ONCE_NEVER_LOADS) == []


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
    second = memd(memd_env, "run")  # in this process: the instance is the other process's
    assert second.returncode == Exit.BUSY
    assert f"pid {first.proc.pid}" in second.stderr
    assert f"host {socket.gethostname()}" in second.stderr
    once = memd(memd_env, "run", "--once")
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
    second = memd(memd_env, "run", "--once")  # in this process; it takes the instance as `memd run` does
    # The dead instance's lease would only expire after two minutes: a start that did not see its
    # holder gone is refused as busy (it never waits for a lease), and this one took it over.
    assert second.returncode == 0, second.stderr[-3000:]
    assert "instance_taken_over" in second.stderr


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
    # Off a terminal: no spinner (test_run_once.py::test_run_once_dry_run_lists_what_it_would_extract_without_a_key).


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


def memd_status(env: dict[str, str], *args: str) -> Ran:
    return memd({**env, "COLUMNS": "200"}, "status", *args)


def wait_for_stderr(proc: Memd | Once, text: str, timeout_s: float = 60) -> None:
    """Until the process has written ``text`` to its stderr (a file), read again as it grows."""
    deadline = time.monotonic() + timeout_s
    while text not in proc.stderr():
        assert time.monotonic() < deadline, f"no {text!r} in stderr:\n{proc.stderr()[-3000:]}"
        assert proc.proc.poll() is None, proc.stderr()[-3000:]
        time.sleep(0.05)


def exits_within(proc: subprocess.Popen[Any], seconds: float) -> tuple[int, float]:
    t0 = time.monotonic()
    try:
        code = proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running {seconds:.0f}s after the signal")
    return code, time.monotonic() - t0


def test_a_step_blocked_in_a_thread_is_shown_stuck_and_sigterm_still_ends_the_process(
    tmp_path: Path, memd_env: dict[str, str], started: list[Memd]
) -> None:
    env = blocking(memd_env)
    daemon = Memd(tmp_path, "blocked", env, "scan", "thread", "run", module="tests.daemon.blocking_memd")
    started.append(daemon)
    daemon.wait_for("READY=1")
    wait_for_stderr(daemon, "blocking scan")
    deadline = time.monotonic() + 30
    while True:  # the step is stuck once it has run past its deadline (1.2 s)
        done = memd_status(env, "--json")
        report = json.loads(done.stdout)
        if report["daemon"]["state"] == "stuck" or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert report["daemon"]["state"] == "stuck", report["daemon"]
    assert done.returncode == Exit.STUCK
    assert report["daemon"]["stuck_step"]["step"] == "scan"
    assert report["daemon"]["stuck_step"]["running_s"] >= 1.2
    human = memd_status(env)
    assert human.returncode == Exit.STUCK
    assert re.search(r"daemon stuck .*scan has run for \d+s", human.stdout), human.stdout

    daemon.signal(signal.SIGTERM)
    code, took = exits_within(daemon.proc, EXIT_BOUND_S)
    assert code == 0, daemon.stderr()[-3000:]
    assert "shutdown_cancelling_work" in daemon.stderr()
    after = json.loads(memd_status(env, "--json").stdout)
    assert after["daemon"]["state"] == "stopped"  # the stop was recorded, the instance released
    assert after["leases"] == []


def test_a_step_blocking_the_event_loop_still_ends_on_sigterm(
    tmp_path: Path, memd_env: dict[str, str], started: list[Memd]
) -> None:
    env = blocking(memd_env, MEMD_SCHEDULE__SHUTDOWN_TIMEOUT_S="0.1")  # nothing can finish: no wait
    daemon = Memd(tmp_path, "loop", env, "scan", "loop", "run", module="tests.daemon.blocking_memd")
    started.append(daemon)
    daemon.wait_for("READY=1")
    wait_for_stderr(daemon, "blocking scan")
    daemon.signal(signal.SIGTERM)
    code, _ = exits_within(daemon.proc, EXIT_BOUND_S)
    assert code != 0  # nothing could be released: not a clean stop
    assert "shutdown_overran" in daemon.stderr()


# Ctrl-C during `memd run --once` -----------------------------------------------------------------


class Once:
    """`memd run --once` with one step blocked, its stdout read line by line as it comes; stderr
    goes to a file (never a full pipe)."""

    def __init__(self, tmp_path: Path, env: dict[str, str], step: str, how: str) -> None:
        self.stderr_path = tmp_path / f"once-{step}-{how.replace(':', '-')}.stderr"
        with self.stderr_path.open("wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tests.daemon.blocking_memd", step, how, "run", "--once"],
                env=env,
                cwd=Path(__file__).parents[3],
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
            )
        self.lines: list[str] = []

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

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
        out, _ = self.proc.communicate(timeout=EXIT_TIMEOUT_S)
        return "".join(self.lines) + out, self.stderr()

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


def test_ctrl_c_during_run_once_says_what_it_waits_for_and_names_the_skipped_steps(
    tmp_path: Path, memd_env: dict[str, str], onces: list[Once]
) -> None:
    env = blocking(memd_env, MEMD_SCHEDULE__SHUTDOWN_TIMEOUT_S="30")
    once = Once(tmp_path, env, "extract", "sleep:10")
    onces.append(once)
    once.line_with("scan ")
    wait_for_stderr(once, "blocking extract")  # extract is under way, for 10 s
    once.proc.send_signal(signal.SIGINT)
    notice = once.line_with("interrupted")
    # at once, not when the step is done: the step has not yet written that it slept
    assert "slept extract" not in once.stderr()
    assert "extract" in notice
    assert "30s" in notice
    assert "Ctrl-C again" in notice
    out, err = once.rest()
    summary = out.strip().splitlines()[-1]
    assert summary.startswith("scan ok, extract ok"), out
    assert "consolidate skipped: interrupted" in summary
    assert "publish skipped: interrupted" in summary


def test_a_second_ctrl_c_abandons_the_step_and_still_reports_what_ran(
    tmp_path: Path, memd_env: dict[str, str], onces: list[Once]
) -> None:
    env = blocking(memd_env, MEMD_SCHEDULE__SHUTDOWN_TIMEOUT_S="30")
    once = Once(tmp_path, env, "extract", "thread")
    onces.append(once)
    once.line_with("scan ")
    wait_for_stderr(once, "blocking extract")  # extract is under way
    once.proc.send_signal(signal.SIGINT)
    once.line_with("interrupted", timeout_s=10)  # the step never ends: any notice came at once
    once.proc.send_signal(signal.SIGINT)
    once.line_with("abandon", timeout_s=10)
    code, _ = exits_within(once.proc, 10)  # the thread stuck in its read does not keep it alive
    out, err = once.rest()
    summary = out.strip().splitlines()[-1]
    assert "nothing ran" not in out
    assert summary.startswith("scan ok, extract cancelled"), out
    assert "publish skipped: interrupted" in summary
    assert code == 1  # a step was cut short


def test_ctrl_c_while_run_once_waits_for_batches_stops_waiting_and_names_the_skipped_steps(
    memd_env: dict[str, str], fake_api: FakeAnthropicAPI
) -> None:
    env = batch_env(memd_env, fake_api)
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
    assert "`memd run --once --wait` waits for them" in stdout  # the way to wait is named
    assert "gave up" not in stdout

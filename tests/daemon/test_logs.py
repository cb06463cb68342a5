from __future__ import annotations

import io
import json
import logging
import re
import sys

import pytest
import structlog

from daemon.logs import configure_logging


def test_json_lines_off_a_terminal_and_library_loggers_routed_and_quiet() -> None:
    stream = io.StringIO()
    configure_logging(level="DEBUG", stream=stream)
    structlog.get_logger("memd.test").info("scan_finished", files=3)
    logging.getLogger("apscheduler.scheduler").warning("job missed")
    logging.getLogger("anthropic._base_client").debug("Request options: secret transcript text")
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert lines[0]["event"] == "scan_finished"
    assert lines[0]["files"] == 3
    assert lines[0]["level"] == "info"
    assert lines[1]["event"] == "job missed"
    assert lines[1]["logger"] == "apscheduler.scheduler"
    assert "secret transcript text" not in stream.getvalue()
    assert logging.getLogger("anthropic").getEffectiveLevel() >= logging.WARNING


def test_tracebacks_carry_no_local_variables() -> None:
    stream = io.StringIO()
    configure_logging(level="INFO", stream=stream)

    def leak() -> None:
        api_key = "sk-ant-api03-SECRETSECRETSECRET"  # noqa: F841 - a local the traceback must not show
        raise RuntimeError("boom")

    try:
        leak()
    except RuntimeError:
        structlog.get_logger("memd.test").exception("step_failed")
    out = stream.getvalue()
    assert "boom" in out
    assert "SECRETSECRET" not in out


def test_per_task_context_is_merged() -> None:
    stream = io.StringIO()
    configure_logging(level="INFO", stream=stream)
    with structlog.contextvars.bound_contextvars(transcript_id=42):
        structlog.get_logger("memd.test").info("extract_started")
    assert json.loads(stream.getvalue().splitlines()[0])["transcript_id"] == 42


def test_a_one_shot_command_logs_readable_lines_off_a_terminal_the_daemon_json(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 36: a one-shot command's warnings printed as raw JSON lines where its summary is read."""
    from pathlib import Path

    from daemon.cli.context import CliContext

    for daemon, is_json in ((False, False), (True, True)):
        stream = io.StringIO()
        monkeypatch.setattr(sys, "stderr", stream)
        CliContext(config_path=Path("c.toml"), log_level="INFO", log_level_given=False).configure_logging(
            daemon=daemon
        )
        structlog.get_logger("memd.test").warning("store_slow", waited_s=3)
        line = stream.getvalue().strip()
        assert line.startswith("{") is is_json, line
        assert "store_slow" in line


def test_a_console_traceback_is_drawn_by_rich_without_local_variables() -> None:
    """structlog is imported without rich (``daemon.logs``); the console's tracebacks are still rich's."""
    stream = io.StringIO()
    configure_logging(level="INFO", stream=stream, json=False)

    def leak() -> None:
        api_key = "sk-ant-api03-" + "SECRET" * 3  # noqa: F841 - a local the traceback must not show
        raise RuntimeError("boom")

    try:
        leak()
    except RuntimeError:
        structlog.get_logger("memd.test").exception("step_failed")
    out = re.sub(r"\x1b\[[0-9;]*m", "", stream.getvalue())  # rich's colours
    assert "step_failed" in out
    assert "Traceback (most recent call last)" in out  # rich's panel title
    assert "RuntimeError: boom" in out
    assert "SECRETSECRET" not in out

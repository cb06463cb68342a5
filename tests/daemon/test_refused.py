"""A second daemon on a store another one holds is refused: it says so, and never reports a crash."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest

from daemon.logs import configure_logging
from daemon.service import RunState
from pipeline.clock import FakeClock
from pipeline.errors import InstanceBusy
from tests.daemon.test_service import TIMEOUT_S, FakeSteps, make_daemon, make_settings, wait_cycles


async def test_a_refused_second_daemon_logs_busy_not_crashed(tmp_path: Path, clock: FakeClock) -> None:
    settings = make_settings(tmp_path)
    first = make_daemon(settings, clock, FakeSteps())
    run = asyncio.create_task(first.run_forever(install_signals=False))
    await wait_cycles(first, 1)
    second = make_daemon(settings, clock, FakeSteps())
    out = io.StringIO()
    configure_logging(level="INFO", stream=out, json=True)  # the lines the journal would get
    with pytest.raises(InstanceBusy):
        await second.run_forever(install_signals=False)
    first.request_stop()
    assert await asyncio.wait_for(run, timeout=TIMEOUT_S) == 0
    logs = [json.loads(line) for line in out.getvalue().splitlines()]
    states = [e.get("state") for e in logs if e["event"] == "daemon_state"]
    assert RunState.crashed.value not in states, logs
    assert second.state is not RunState.crashed
    [refused] = [e for e in logs if e["event"] == "daemon_refused"]
    assert refused["reason"] == "busy"
    assert refused["holder_pid"] == 4242
    assert refused["holder_host"] == "h1"

"""`memd` with one step made to block, for the lifecycle tests (not a test module).

    python -m tests.daemon.blocking_memd STEP HOW [memd arguments...]

runs the real CLI (`python -m daemon`'s ``main``) after wrapping the composition root's steps
(``daemon.app.pipeline_steps``) so that ``STEP`` does not return:

- ``thread``: it waits in a worker thread stuck in a ``read`` that never returns (a pipe whose
  write end stays open), as a read of a FIFO would;
- ``loop``: the same ``read`` on the event loop's own thread, so nothing else of the daemon runs;
- ``sleep:<s>``: it sleeps ``s`` seconds in a worker thread, then writes ``slept STEP`` to stderr
  and returns.

Before blocking, the step writes ``blocking STEP`` to stderr.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Mapping

from daemon import app
from daemon.service.cycle import StepEnv, StepSet
from pipeline.clock import Clock


def blocking_step(name: str, how: str) -> object:
    read_end, _write_end = os.pipe()  # the write end stays open: the read never returns

    async def step(*, dry_run: bool) -> object:
        print(f"blocking {name}", file=sys.stderr, flush=True)
        if how == "thread":
            await asyncio.to_thread(os.read, read_end, 1)
        elif how == "loop":
            os.read(read_end, 1)
        elif how.startswith("sleep:"):
            await asyncio.to_thread(time.sleep, float(how.removeprefix("sleep:")))
            print(f"slept {name}", file=sys.stderr, flush=True)
            return {"slept_s": float(how.removeprefix("sleep:"))}
        raise AssertionError(f"{name} returned")

    return step


def main() -> None:
    name, how, *args = sys.argv[1:]
    real = app.pipeline_steps

    def steps(env: StepEnv, *, clock: Clock, environ: Mapping[str, str], dry_run: bool = False) -> StepSet:
        found = real(env, clock=clock, environ=environ, dry_run=dry_run)
        return StepSet({**found.steps, name: blocking_step(name, how)}, close=found.close)  # type: ignore[dict-item]

    app.pipeline_steps = steps  # type: ignore[assignment]
    from daemon.cli import main as memd

    memd(args)


if __name__ == "__main__":
    main()

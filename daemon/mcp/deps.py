"""What the tools of `memd mcp` share, made once per server: the settings' paths, the session's
working directory, the clock, the memory, the redactor and the use recorder.

A tools module (``daemon.mcp.server.TOOL_MODULES``) takes what it needs from here in its
``register(server, deps)``; a part only some tools use is made on first use.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from daemon.mcp.memory import Memory
from daemon.mcp.outbound import Redact
from daemon.mcp.uses import Uses
from pipeline.clock import Clock


@dataclass
class Deps:
    memory_dir: Path
    state_dir: Path
    state_db: str
    cwd: Path
    clock: Clock
    config_path: Path | None
    memory: Memory
    redact: Redact
    uses: Uses

    @classmethod
    def make(
        cls,
        *,
        memory_dir: Path,
        state_dir: Path,
        state_db: str,
        cwd: Path,
        clock: Clock,
        config_path: Path | None = None,
    ) -> Deps:
        return cls(
            memory_dir=memory_dir,
            state_dir=state_dir,
            state_db=state_db,
            cwd=cwd,
            clock=clock,
            config_path=config_path,
            memory=Memory(memory_dir, cwd, clock),
            redact=Redact(state_dir),
            uses=Uses(state_db, clock),
        )

    def warm(self) -> None:
        """Make what the first call needs (the project, the index, the redactor, the use counts), so
        it answers as fast as the next; run on a thread of its own once the server is built. A failure is
        left to the first call, which makes what is missing and reports the problem itself."""
        try:
            self.memory.session()
            self.memory.index()
            self.redact.redactor()
            self.uses.counts()
        except Exception:
            pass

    def close(self) -> None:
        self.uses.close()

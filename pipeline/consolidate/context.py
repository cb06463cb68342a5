"""What a phase-2 run is given (``Phase2Context``) and what it gives back (``RunResult``)."""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from pipeline.clock import Clock
from pipeline.gitrepo.message_gate import SecretFinder
from pipeline.gitrepo.repository import MemoryRepo
from pipeline.layout import Caps
from pipeline.llm.pricing import Usage
from pipeline.llm.protocol import ModelClient
from pipeline.settings import Settings
from pipeline.store import Store
from pipeline.vocabulary import RunOutcome


@dataclass
class Phase2Context:
    store: Store
    settings: Settings
    clock: Clock
    llm: ModelClient | None
    """The model client, or None without an API key (then only a run with no model call works)."""
    finder: SecretFinder | None
    repo: MemoryRepo
    scratch_parent: Path
    host: str = field(default_factory=socket.gethostname)
    pid: int = field(default_factory=os.getpid)

    @property
    def caps(self) -> Caps:
        return Caps.of(self.settings.memories)

    def clean(self) -> Callable[[str], str]:
        redact = getattr(self.finder, "redact", None)
        if redact is None:
            return str
        return lambda text: str(getattr(redact(text), "text", text))


@dataclass
class RunResult:
    scope: str
    outcome: RunOutcome
    run_id: str | None = None
    reason: str | None = None
    commit: str | None = None
    branch: str | None = None
    mode: str | None = None
    usage: Usage = field(default_factory=Usage)
    turns: int = 0
    findings: list[str] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)
    removed_topics: dict[str, str] = field(default_factory=dict)
    withdrawn: list[str] = field(default_factory=list)
    """Topics memd withdrew before the agent ran because they cited a forgotten session."""
    pinned_withdrawn: list[str] = field(default_factory=list)
    """Those of them the person had pinned (a forget outranks a pin; the forget says so)."""
    rebuilt: list[str] = field(default_factory=list)
    """The withdrawn topics the agent wrote again from the remaining inputs."""
    guarded: list[str] = field(default_factory=list)
    """What memd restored or removed after the repair turn to keep what the person decided."""
    inputs: int = 0
    added: int = 0
    removed: int = 0
    duplicates_found: int = 0
    """Duplicates the checks found after the agent's work (``pipeline.checks.duplicates``)."""
    duplicates_fixed: int = 0
    """Of those, how many the repair turn took away."""


def new_run_id(now: datetime) -> str:
    return f"{now.strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(3)}"

"""Phase 1 keeps what the user said: every agent's sessions at 1x, 3x and 10x the phase-1 budget.

Each session (written in the agent's own transcript format by ``tests/pipeline/sources/
shell_sessions.py``) has 12 short user turns, each carrying a unique reference token, spread evenly
through long shell outputs; its size is the whole session as Codex would serialize it (JSON of every
item, ``benchmarks/codex_phase1.py``), about 1, 3 or 10 times ``[memories] render_token_budget``.
memd runs a real cycle's scan and extract steps on them (``tests/daemon/cycle_support.py``) against
the loopback fake of the Messages API; the figures come from the phase-1 requests the fake received:
the user turns whose token reached the model, and the transcript's size (estimated tokens, chars/3.5).
The baselines are Codex's own phase 1 (v1: head and tail of the JSON; v2: tiered, human first) on the
same items, parsed by memd's adapters, with the same token limit. Target: memd keeps all 12 turns and
stays within the budget.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from benchmarks.codex_phase1 import codex_json, codex_v1, codex_v2
from benchmarks.quality import Figure
from pipeline.extract.compact import CHARS_PER_TOKEN, estimate_tokens
from pipeline.extract.item import parse_full
from pipeline.sources import registry
from tests.daemon.cycle_support import agent_folder, home_env, running, settings_of
from tests.fakes.anthropic_api import FakeAnthropicAPI, FakeResponse, json_message
from tests.pipeline.extract.support import extract_output
from tests.pipeline.sources.shell_sessions import Exchange, write_exchanges
from tests.source_names import SourceName

NAME = "phase 1 keeps the user's turns"
NO_LIVE = "it measures the phase-1 request memd builds, before any model answers"
"""Why ``--live`` does not run it: its outcome does not depend on the model."""
TURNS = 12
FACTORS = (1, 3, 10)
BUDGET = 60_000
TINY_BUDGET = 2_000
OUTPUT_CHARS = 6_000
TINY_OUTPUT_CHARS = 250
TOKEN = re.compile(r"\bUTURN-[a-z_]+-\d+x-\d\d\b")
TRANSCRIPT = re.compile(r"<transcript>\n(.*)\n</transcript>", re.S)
SESSION_LINE = re.compile(r"^- Session: (\S+)$", re.M)


def token(source: SourceName, factor: int, turn: int) -> str:
    return f"UTURN-{source}-{factor}x-{turn:02d}"


def session_id(source: SourceName, factor: int) -> str:
    n = list(SourceName).index(source)
    return f"5e55{n:04x}-0000-4000-8000-{factor:012d}"


def shown_id(source: SourceName, factor: int) -> str:
    """The session id phase 1 names in its request (OpenCode's ids are its own; OpenHands names a
    conversation by its uuid's 32 hex digits)."""
    sid = session_id(source, factor)
    if source == SourceName.OPENHANDS:
        return sid.replace("-", "")
    return f"ses_{sid.replace('-', '')[:22]}" if source == SourceName.OPENCODE else sid


def output(turn: int, call: int, chars: int) -> str:
    """A long, plain shell output (a build log), different for every call."""
    lines, size, n = [], 0, 0
    while size < chars:
        line = (
            f"[{turn:02d}.{call:03d}.{n:04d}] compiling module_{(turn * 31 + call * 7 + n) % 997:03d} ... ok"
        )
        lines.append(line)
        size += len(line) + 1
        n += 1
    return "\n".join(lines)


def exchanges(source: SourceName, factor: int, budget: int, chars: int) -> list[Exchange]:
    """12 exchanges whose whole JSON is about ``factor`` x ``budget`` tokens."""
    # One call in Codex's JSON: its output JSON-escaped, the call with its arguments, the wrappers.
    per_call = len(json.dumps(output(0, 0, chars))) + 160
    per_turn = 250  # the user's turn and the agent's answer, as JSON
    room = factor * budget * CHARS_PER_TOKEN - TURNS * per_turn
    calls = max(1, round(room / (TURNS * per_call)))
    return [
        Exchange(
            f"Also keep in mind {token(source, factor, i)}: the staging port is {8000 + i}.",
            tuple((f"make build STEP={i}.{c}", output(i, c, chars)) for c in range(calls)),
            f"Noted; step {i} built.",
        )
        for i in range(TURNS)
    ]


@dataclass(frozen=True)
class Measured:
    source: SourceName
    factor: int
    session_tokens: int
    memd_kept: int | None
    memd_tokens: int | None
    v1_kept: int
    v1_tokens: int
    v2_kept: int
    v2_tokens: int


def kept(text: str, source: SourceName, factor: int) -> int:
    wanted = {token(source, factor, i) for i in range(TURNS)}
    return len(wanted & set(TOKEN.findall(text)))


def responder(body: dict[str, object], headers: dict[str, str]) -> FakeResponse:
    return json_message(extract_output())


async def phase1_requests(
    workdir: Path, factor: int, budget: int, chars: int, sources: Iterable[SourceName] = tuple(SourceName)
) -> tuple[dict[str, str], dict[SourceName, Path]]:
    """Write every agent's session at ``factor`` x ``budget``, run scan and extract once; the
    transcript each session's first phase-1 request carried, by session id, and the session files."""
    api = FakeAnthropicAPI().start()
    api.responder = responder
    try:
        env = home_env(workdir / f"{factor}x", api.base_url, MEMD_MEMORIES__RENDER_TOKEN_BUDGET=str(budget))
        paths = {
            source: write_exchanges(
                source,
                agent_folder(env, source),
                exchanges(source, factor, budget, chars),
                sid=session_id(source, factor),
            )
            for source in sources
        }
        settings = settings_of(env)
        async with running(settings, env) as cycle:
            result = await cycle(["scan", "extract"])
        failed = [r for r in result.results if r.failed]
        if failed:
            raise RuntimeError(f"the cycle failed: {failed}")
        sent: dict[str, str] = {}
        for request in api.message_requests():
            text = str(request.json["messages"][0]["content"])
            sid = SESSION_LINE.search(text)
            body = TRANSCRIPT.search(text)
            if sid is not None and body is not None:
                sent.setdefault(sid.group(1), body.group(1))
        return sent, paths
    finally:
        api.stop()


def measure(workdir: Path, *, tiny: bool) -> list[Measured]:
    budget = TINY_BUDGET if tiny else BUDGET
    chars = TINY_OUTPUT_CHARS if tiny else OUTPUT_CHARS
    out: list[Measured] = []
    for factor in FACTORS[-1:] if tiny else FACTORS:  # tiny: the cut that matters most, so none rots
        sent, paths = asyncio.run(phase1_requests(workdir, factor, budget, chars))
        for source in SourceName:
            parsed = parse_full(source, paths[source])
            assert parsed.transcript is not None, (source, parsed.problem)
            items = parsed.transcript.items
            v1, v2 = codex_v1(items, budget), codex_v2(items, budget)
            memd = sent.get(shown_id(source, factor))
            out.append(
                Measured(
                    source,
                    factor,
                    estimate_tokens(codex_json(items)),
                    None if memd is None else kept(memd, source, factor),
                    None if memd is None else estimate_tokens(memd),
                    kept(v1, source, factor),
                    estimate_tokens(v1),
                    kept(v2, source, factor),
                    estimate_tokens(v2),
                )
            )
    return out


def run(workdir: Path, *, tiny: bool) -> list[Figure]:
    budget = TINY_BUDGET if tiny else BUDGET
    figures: list[Figure] = []
    for m in measure(workdir, tiny=tiny):
        label = f"{registry.label_of(m.source)} {m.factor}x ({m.session_tokens:,} tok)"
        figures.append(
            Figure(
                f"{label}: user turns kept",
                "no request" if m.memd_kept is None else f"{m.memd_kept}/{TURNS}",
                f"Codex v1 {m.v1_kept}/{TURNS}, v2 {m.v2_kept}/{TURNS}",
                f"{TURNS}/{TURNS}",
                m.memd_kept == TURNS,
            )
        )
        figures.append(
            Figure(
                f"{label}: input tokens",
                "no request" if m.memd_tokens is None else f"{m.memd_tokens:,}",
                f"Codex v1 {m.v1_tokens:,}, v2 {m.v2_tokens:,}",
                f"<= {budget:,}",
                m.memd_tokens is not None and m.memd_tokens <= budget,
            )
        )
    return figures

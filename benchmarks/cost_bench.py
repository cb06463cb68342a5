"""What memd's model calls cost: tokens and dollars per session (phase 1) and per scope run (phase 2).

    .venv/bin/python benchmarks/cost_bench.py [--tiny] [--agents claude_code,codex,...]

Runs the real pipeline (`memd run --once`, a whole process, batches off so every request is a plain
``POST /v1/messages``) on the shipped sessions (``tests/fixtures/transcripts``: every agent's) against
the loopback fake of the Messages API (``tests/fakes/anthropic_api.py``), which answers with scripted
extractions and consolidation turns. It then counts the tokens each recorded request really carries
(the fake's own count: 4 bytes of the request body per token) and prices them with
``pipeline/llm/pricing.py`` on the default models:

- phase 1, per session: the extraction request's input tokens, and the answer's tokens;
- phase 2, per scope run: every turn's request (each re-sends the conversation), with prompt caching's
  share: the prefix up to the request's last ``cache_control`` breakpoint is written to the cache by
  a conversation's first turn and read from it by every later turn (a read is billed at 0.1x input,
  a write at 1.25x), beside the same turns priced with no cache at all.

The baseline from the same run: each session's raw size in tokens (its file's bytes / 4), what sending
the whole transcript would have cost on the same model. The answers are the fake's scripted ones
(short), so output figures are a floor; input figures are what memd really sends.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline import roster  # noqa: E402
from pipeline.llm.pricing import BATCH_DISCOUNT, Usage, cost_usd  # noqa: E402
from pipeline.settings import LLMSettings  # noqa: E402
from tests.fakes.anthropic_api import FakeAnthropicAPI, FakeResponse, json_message  # noqa: E402
from tests.fakes.fixtures import FAKE_API_KEY  # noqa: E402
from tests.pipeline.consolidate.support import write_memory  # noqa: E402
from tests.pipeline.extract.support import extract_output  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "transcripts"
AGENTS = ("claude_code", "codex", "gemini_cli", "pi", "qwen_code", "copilot_cli")
BYTES_PER_TOKEN = 4


def tokens(value: Any) -> int:
    """What the fake API counts: 4 bytes of JSON per token."""
    return max(1, len(json.dumps(value)) // BYTES_PER_TOKEN)


class Responder:
    """Extractions for phase 1; the scripted consolidation conversation for phase 2."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.answers: list[tuple[dict[str, Any], int]] = []

    def __call__(self, body: dict[str, Any], headers: dict[str, str]) -> FakeResponse:
        if body.get("tools"):
            turns = write_memory()
            done = sum(1 for m in body["messages"] if m["role"] == "assistant")
            answer = turns[min(done, len(turns) - 1)]
        else:
            answer = json_message(extract_output())
        with self.lock:
            self.answers.append((body, tokens((answer.json or {}).get("content", []))))
        return answer


def cached_prefix(body: dict[str, Any]) -> int:
    """Tokens of the request up to and including its last ``cache_control`` breakpoint (tools,
    system, then the messages' blocks in order); 0 when it marks none."""
    parts: list[Any] = []
    upto = 0
    for tool in body.get("tools") or []:
        parts.append(tool)
        if isinstance(tool, dict) and "cache_control" in tool:
            upto = len(parts)
    system = body.get("system")
    for block in system if isinstance(system, list) else ([system] if system else []):
        parts.append(block)
        if isinstance(block, dict) and "cache_control" in block:
            upto = len(parts)
    for message in body.get("messages") or []:
        content = message.get("content")
        for block in content if isinstance(content, list) else [content]:
            parts.append(block)
            if isinstance(block, dict) and "cache_control" in block:
                upto = len(parts)
    if "cache_control" in body:  # automatic caching: the breakpoint at the last block sent
        upto = len(parts)
    return tokens(parts[:upto]) if upto else 0


@dataclass
class ScopeRun:
    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_write: int = 0
    cache_read: int = 0
    prefixes: list[int] = field(default_factory=list)

    def usage(self, *, cached: bool) -> Usage:
        if not cached:
            return Usage(self.input_tokens, self.output_tokens)
        return Usage(
            self.input_tokens - self.cache_write - self.cache_read,
            self.output_tokens,
            self.cache_read,
            self.cache_write,
        )


def conversation_key(body: dict[str, Any]) -> str:
    """A phase-2 conversation's identity: its first user message (the same on every turn)."""
    return json.dumps(body["messages"][0], sort_keys=True)[:4000]


def run_memd(tmp: Path, agents: Sequence[str], base_url: str) -> subprocess.CompletedProcess[str]:
    home = tmp / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMD_", "XDG_", "NOTIFY_", "WATCHDOG_"))}
    env.update(
        {
            "HOME": str(home),
            "ANTHROPIC_API_KEY": FAKE_API_KEY,
            "MEMD_LLM__BASE_URL": base_url,
            "MEMD_LLM__BATCH": "off",
            "MEMD_MEMORIES__MIN_ROLLOUT_IDLE_HOURS": "0",
            "MEMD_MEMORIES__MAX_ROLLOUT_AGE_DAYS": "36500",
        }
    )
    for agent in roster.agents():
        name = agent.name.upper()
        if agent.name in agents and (FIXTURES / agent.name).is_dir():
            root = home / "roots" / agent.name
            shutil.copytree(FIXTURES / agent.name, root, symlinks=False)
            leaf = agent.default_root({"HOME": str(home)}).name  # "projects", "sessions", "tmp"...
            where = root / leaf if (root / leaf).is_dir() else root
            env[f"MEMD_SOURCES__{name}__ROOT"] = str(where)
        else:
            env[f"MEMD_SOURCES__{name}__ROOT"] = str(tmp / "none")
    return subprocess.run(
        [sys.executable, "-m", "daemon", "run", "--once"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def raw_tokens(agents: Sequence[str], sent: str) -> dict[str, int]:
    """The raw size in tokens (the baseline) of each fixture session file whose name (its session
    id, or the part after ``rollout-<time>-``) an extraction request names."""
    out = {}
    for agent in agents:
        for path in sorted((FIXTURES / agent).rglob("*")):
            if not (path.is_file() and path.suffix in (".jsonl", ".json") and path.stat().st_size > 0):
                continue
            stem = path.name.split(".")[0]
            ident = stem[-36:] if len(stem) >= 36 else stem
            if ident in sent:
                out[f"{agent}/{path.name}"] = path.stat().st_size // BYTES_PER_TOKEN
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--agents", default=",".join(AGENTS))
    parser.add_argument("--tiny", action="store_true", help="Claude Code's sessions only (CI's check)")
    args = parser.parse_args(argv)
    agents = ["claude_code"] if args.tiny else [a for a in args.agents.split(",") if a]
    llm = LLMSettings()
    extract_model, consolidation_model = llm.extract_model, llm.consolidation_model

    fake = FakeAnthropicAPI().start()
    responder = Responder()
    fake.responder = responder
    try:
        with tempfile.TemporaryDirectory(prefix="memd-cost-") as tmp:
            done = run_memd(Path(tmp), agents, fake.base_url)
    finally:
        fake.stop()
    if done.returncode != 0:
        print(done.stdout[-3000:], done.stderr[-3000:], sep="\n", file=sys.stderr)
        return 1

    phase1: list[tuple[int, int, int]] = []  # input, output, the cached system prompt's tokens
    runs: dict[str, ScopeRun] = {}
    for body, out_tokens in responder.answers:
        if not body.get("tools"):
            phase1.append((tokens(body), out_tokens, cached_prefix(body)))
            continue
        run = runs.setdefault(conversation_key(body), ScopeRun())
        prefix = cached_prefix(body)
        if run.turns == 0:
            run.cache_write += prefix
        else:
            read = min(prefix, run.prefixes[-1])
            run.cache_read += read
            run.cache_write += prefix - read
        run.prefixes.append(prefix)
        run.turns += 1
        run.input_tokens += tokens(body)
        run.output_tokens += out_tokens

    baseline = raw_tokens(agents, json.dumps([b for b, _ in responder.answers if not b.get("tools")]))
    print(
        f"models: phase 1 {extract_model}, phase 2 {consolidation_model} (list prices, pipeline/llm/pricing.py)"
    )
    print(f"sessions extracted: {len(phase1)} of the shipped fixtures of {', '.join(agents)}")
    if not phase1:
        print("no extraction request was sent", file=sys.stderr)
        return 1
    ins = [i for i, _, _ in phase1]
    outs = [o for _, o, _ in phase1]
    per = [cost_usd(extract_model, Usage(i, o)) for i, o, _ in phase1]
    # the system prompt is marked for the cache: the first extraction writes it, the next ones read it
    cached = [
        cost_usd(extract_model, Usage(i - c, o, 0 if n == 0 else c, c if n == 0 else 0))
        for n, (i, o, c) in enumerate(phase1)
    ]
    system_share = sum(c for _, _, c in phase1[1:]) / max(1, sum(ins))
    raw = sorted(baseline.values())
    raw_cost = [cost_usd(extract_model, Usage(t, 0)) for t in raw]
    print()
    print("phase 1, per session          median      mean       max")
    print(
        f"  input tokens (memd)     {statistics.median(ins):>10,.0f} {statistics.mean(ins):>9,.0f} {max(ins):>9,}"
    )
    print(
        f"  output tokens (scripted){statistics.median(outs):>10,.0f} {statistics.mean(outs):>9,.0f} {max(outs):>9,}"
    )
    print(
        f"  $ standard              {statistics.median(per):>10.5f} {statistics.mean(per):>9.5f} {max(per):>9.5f}"
    )
    print(
        f"  $ batch (the default)   {statistics.median(per) * BATCH_DISCOUNT:>10.5f} "
        f"{statistics.mean(per) * BATCH_DISCOUNT:>9.5f} {max(per) * BATCH_DISCOUNT:>9.5f}"
    )
    print(
        f"  $ standard, cached      {statistics.median(cached):>10.5f} {statistics.mean(cached):>9.5f} "
        f"{max(cached):>9.5f}   (system prompt read from the cache: {system_share:.0%} of input)"
    )
    print(
        f"  baseline: raw session   {statistics.median(raw):>10,.0f} {statistics.mean(raw):>9,.0f} {max(raw):>9,}"
    )
    print(
        f"  baseline $ (raw, input) {statistics.median(raw_cost):>10.5f} "
        f"{statistics.mean(raw_cost):>9.5f} {max(raw_cost):>9.5f}"
    )
    print()
    if not runs:
        print("phase 2: no consolidation request was sent", file=sys.stderr)
        return 1
    print(
        "phase 2, per scope run    turns   input tok  output tok  cache read  cache write   $ cached  $ no cache"
    )
    cached_total = plain_total = 0.0
    for i, run in enumerate(runs.values(), 1):
        with_cache = cost_usd(consolidation_model, run.usage(cached=True))
        without = cost_usd(consolidation_model, run.usage(cached=False))
        cached_total += with_cache
        plain_total += without
        print(
            f"  run {i:<20} {run.turns:>5} {run.input_tokens:>11,} {run.output_tokens:>11,} "
            f"{run.cache_read:>11,} {run.cache_write:>12,} {with_cache:>10.4f} {without:>11.4f}"
        )
    share = sum(r.cache_read for r in runs.values()) / max(1, sum(r.input_tokens for r in runs.values()))
    n = len(runs)
    print(
        f"  mean per run: ${cached_total / n:.4f} with prompt caching, ${plain_total / n:.4f} without; "
        f"cache reads are {share:.0%} of the input tokens"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What memd's model calls cost on long sessions: tokens and dollars per session (phase 1) and per
scope run (phase 2), with prompt caching's share, beside the short test sessions of the same run.

    .venv/bin/python benchmarks/cost_bench.py [--tiny] [--agents claude_code,codex,...]

Runs the real pipeline (`memd run --once`, a whole process, batches off so every request is a plain
``POST /v1/messages``) on two sets of sessions in one HOME:

- the shipped long sessions (``benchmarks/data/long_sessions``: two real Claude Code sessions of
  125 KB and 3.2 MB and a real 1 MB Codex rollout, each published redacted; see its SOURCES.md);
- the short test sessions of every agent (``tests/fixtures/transcripts``), the baseline.

against the loopback fake of the Messages API (``tests/fakes/anthropic_api.py``). What memd sends is
real: each session rendered, redacted and capped by the pipeline, the prompts as memd fills them.
The fake's answers are scripted (an extract with one memory per ~6,000 input tokens, at most 8; a
consolidation that writes three topics), so output figures are an estimate; input is measured.

Tokens are memd's own estimate (``pipeline.layout.estimate_tokens``: UTF-8 bytes / 3.5, the
count `memd consolidate --dry-run` measures with, which errs high) over the request's text (every
string and key of the JSON body). The fake's ``count_tokens`` is not a real tokenizer, so it is not
used. Prices are ``pipeline/llm/pricing.py``'s for the default models.

Prompt caching: a request's prefix up to its last ``cache_control`` breakpoint is written to the
cache the first time (1.25x input) and read by later requests that share it (0.1x), when it is at
least the model's minimum cacheable length (``MIN_CACHEABLE``); phase 2 re-sends the conversation
on every turn, so every turn after the first reads what the turn before wrote. The fake reports
that usage in each answer as the API would, so memd records it in its ledger; the benchmark then
asks the ledger what `memd consolidate --dry-run` says a typical run costs (the same function, on
the same store) and prints it beside its own median.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline import roster  # noqa: E402
from pipeline.consolidate.now import TYPICAL_OF  # noqa: E402
from pipeline.layout import estimate_tokens  # noqa: E402
from pipeline.llm.pricing import BATCH_DISCOUNT, Usage, cost_usd  # noqa: E402
from pipeline.settings import LLMSettings  # noqa: E402
from tests.fakes.anthropic_api import FakeAnthropicAPI, FakeResponse, json_message, usage  # noqa: E402
from tests.fakes.fixtures import FAKE_API_KEY  # noqa: E402
from tests.pipeline.consolidate.support import topic, write_memory  # noqa: E402
from tests.pipeline.extract.support import extract_output  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "transcripts"
LONG = ROOT / "benchmarks" / "data" / "long_sessions"
AGENTS = ("claude_code", "codex", "gemini_cli", "pi", "qwen_code", "copilot_cli")
MIN_CACHEABLE = {"claude-haiku": 4096, "claude-sonnet": 1024, "claude-opus": 4096}
"""The shortest prefix each family caches (tokens); a shorter one is billed as plain input. The
largest published minimum of the family, so the cached figures do not flatter."""
EXTRACT_TOKENS_PER_MEMORY = 6_000


def tokens(value: Any) -> int:
    """memd's estimate of a JSON value's text: every string and key, one space apart."""
    return estimate_tokens(" ".join(_strings(value))) if value else 0


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            if k != "cache_control":
                yield str(k)
                yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif value is not None:
        yield str(value)


def cached_prefix(body: dict[str, Any]) -> tuple[int, str]:
    """The request's prefix up to and including its last ``cache_control`` breakpoint (tools,
    system, then the messages' blocks in order): its tokens and a digest; (0, "") when none."""
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
    if not upto:
        return 0, ""
    prefix = parts[:upto]
    return tokens(prefix), hashlib.sha256(json.dumps(prefix, sort_keys=True).encode()).hexdigest()


def min_cacheable(model: str) -> int:
    return next((n for family, n in MIN_CACHEABLE.items() if model.startswith(family)), 4096)


@dataclass
class Call:
    input_tokens: int  # everything the request carries
    output_tokens: int
    cache_read: int
    cache_write: int
    text: str = ""  # phase 1: the user prompt (to tell which session it is)

    def usage(self, *, cached: bool) -> Usage:
        if not cached:
            return Usage(self.input_tokens, self.output_tokens)
        plain = self.input_tokens - self.cache_read - self.cache_write
        return Usage(plain, self.output_tokens, self.cache_read, self.cache_write)


@dataclass
class Conversation:
    calls: list[Call] = field(default_factory=list)
    scope: str = ""
    last_prefix: tuple[int, str] = (0, "")


def scripted_extract(input_tokens: int) -> dict[str, Any]:
    """An extract sized like a real one: one memory per ``EXTRACT_TOKENS_PER_MEMORY`` input tokens."""
    n = max(1, min(8, input_tokens // EXTRACT_TOKENS_PER_MEMORY))
    base = extract_output()["memories"][0]
    memories = [
        {
            **base,
            "name": f"Practice {i + 1} of this project",
            "body": f"Practice {i + 1}: " + "run the narrow check before the wide one, then the suite. " * 4,
        }
        for i in range(n)
    ]
    raw = "\n".join(
        f"- practice {i + 1}: " + "what was done, with the command that did it. " * 3 for i in range(n)
    )
    return extract_output(memories=memories, raw_memory=raw)


class Responder:
    """Extractions for phase 1; a scripted consolidation conversation for phase 2; each answer
    reports the usage the real API would (input, output, cache read and write)."""

    def __init__(self, extract_model: str, consolidation_model: str) -> None:
        self.lock = threading.Lock()
        self.min_extract = min_cacheable(extract_model)
        self.min_consolidate = min_cacheable(consolidation_model)
        self.phase1: list[Call] = []
        self.seen_prefixes: set[str] = set()
        self.extract_prefix = 0  # the tokens of phase 1's marked prefix (its system prompt)
        self.runs: dict[str, Conversation] = {}

    def __call__(self, body: dict[str, Any], headers: dict[str, str]) -> FakeResponse:
        total = tokens(body)
        size, digest = cached_prefix(body)
        with self.lock:
            if body.get("tools"):
                run = self.runs.setdefault(json.dumps(body["messages"][0], sort_keys=True), Conversation())
                if not run.scope:
                    run.scope = _scope_named(body)
                turns = write_memory(_topics())
                answer = turns[min(len(run.calls), len(turns) - 1)]
                cacheable = size if size >= self.min_consolidate else 0
                read = min(cacheable, run.last_prefix[0]) if run.calls else 0
                write = cacheable - read
                run.last_prefix = (size, digest)
                out = tokens((answer.json or {}).get("content", []))
                call = Call(total, out, read, write)
                run.calls.append(call)
            else:
                answer = json_message(scripted_extract(total))
                cacheable = size if size >= self.min_extract else 0
                read = cacheable if cacheable and digest in self.seen_prefixes else 0
                write = cacheable - read
                self.seen_prefixes.add(digest)
                self.extract_prefix = max(self.extract_prefix, size)
                out = tokens((answer.json or {}).get("content", []))
                call = Call(total, out, read, write, _user_text(body))
                self.phase1.append(call)
        reported = usage(total - read - write, out, cache_read=read, cache_write=write)
        return FakeResponse(answer.status, {**(answer.json or {}), "usage": reported}, answer.headers)


def _topics() -> dict[str, str]:
    """Three topics of about 250 tokens each, distinct enough for memd's duplicate check."""
    facts = {
        "testing": ("pytest", "fixture", "flaky", "marker", "coverage", "snapshot", "timeout", "seed"),
        "building": ("cargo", "linker", "cache", "profile", "feature", "target", "workspace", "vendor"),
        "releasing": ("tag", "changelog", "wheel", "signature", "registry", "notes", "branch", "rollback"),
    }
    return {
        f"{name}.md": topic(
            name.capitalize(),
            "\n".join(
                f"- {w}: the {name} {w} rule ({i}) was settled with the user; {w} {i * 7} stays as agreed."
                for i, w in enumerate(words, 1)
            ),
        )
        for name, words in facts.items()
    }


def _user_text(body: dict[str, Any]) -> str:
    return " ".join(_strings(body.get("messages") or []))


def _scope_named(body: dict[str, Any]) -> str:
    import re

    text = _user_text(body)[:20_000]
    found = re.search(r"\b(global|projects/[A-Za-z0-9._-]+)", text)
    return found.group(1) if found else "?"


def _env(home: Path, base_url: str) -> dict[str, str]:
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
    return env


def lay_out(tmp: Path, agents: Sequence[str], env: dict[str, str], *, tiny: bool = False) -> dict[str, str]:
    """Each agent's short fixtures and long sessions under its root in ``tmp/home``; returns the long
    sessions' ids (as memd names them in the extraction prompt) to their file names."""
    home = Path(env["HOME"])
    long_ids: dict[str, str] = {}
    for agent in roster.agents():
        name = agent.name.upper()
        if agent.name not in agents:
            env[f"MEMD_SOURCES__{name}__ROOT"] = str(tmp / "none")
            continue
        root = home / "roots" / agent.name
        root.mkdir(parents=True)
        if (FIXTURES / agent.name).is_dir():
            shutil.copytree(FIXTURES / agent.name, root, symlinks=False, dirs_exist_ok=True)
        packs = sorted((LONG / agent.name).rglob("*.gz"), key=lambda p: p.stat().st_size)
        for packed in packs[:1] if tiny else packs:
            rel = packed.relative_to(LONG / agent.name).with_suffix("")
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(gzip.decompress(packed.read_bytes()))
            long_ids[_session_id(root / rel)] = f"{agent.name}/{rel.name}"
        leaf = agent.default_root({"HOME": str(home)}).name  # "projects", "sessions", "tmp"...
        where = root / leaf if (root / leaf).is_dir() else root
        env[f"MEMD_SOURCES__{name}__ROOT"] = str(where)
    return long_ids


def _session_id(path: Path) -> str:
    """The id the extraction prompt names: the file name's uuid tail (Claude Code, Codex)."""
    stem = path.name.split(".")[0]
    return stem[-36:] if len(stem) >= 36 else stem


def run_memd(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "daemon", "run", "--once"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def dry_run_typical(env: dict[str, str]) -> tuple[float | None, int]:
    """What `memd consolidate --dry-run` gives as a typical run on this HOME: the same function
    (``pipeline.consolidate.now.typical_run_usd``) on the same state store."""
    from daemon.config import load_settings
    from daemon.runtime import open_store_here
    from pipeline.consolidate.now import typical_run_usd

    settings = load_settings(None, env).settings

    async def go() -> tuple[float | None, int]:
        store = await open_store_here(settings, dry_run=True)
        try:
            return await typical_run_usd(SimpleNamespace(store=store, settings=settings))  # type: ignore[arg-type]
        finally:
            await store.close()

    return asyncio.run(go())


def _row(label: str, values: Sequence[float], fmt: str) -> str:
    if not values:
        return f"  {label:<34} {'-':>10}"
    cells = (statistics.median(values), statistics.mean(values), max(values))
    return f"  {label:<34} " + " ".join(format(v, fmt).rjust(10) for v in cells)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--agents", default=",".join(AGENTS))
    parser.add_argument(
        "--tiny", action="store_true", help="Claude Code's sessions, the smallest long one only (CI's check)"
    )
    args = parser.parse_args(argv)
    agents = ["claude_code"] if args.tiny else [a for a in args.agents.split(",") if a]
    llm = LLMSettings()
    extract_model, consolidation_model = llm.extract_model, llm.consolidation_model

    fake = FakeAnthropicAPI().start()
    responder = Responder(extract_model, consolidation_model)
    fake.responder = responder
    try:
        with tempfile.TemporaryDirectory(prefix="memd-cost-") as tmp:
            env = _env(Path(tmp) / "home", fake.base_url)
            long_ids = lay_out(Path(tmp), agents, env, tiny=args.tiny)
            done = run_memd(env)
            typical = dry_run_typical(env) if done.returncode == 0 else (None, 0)
    finally:
        fake.stop()
    if done.returncode != 0:
        print(done.stdout[-3000:], done.stderr[-3000:], sep="\n", file=sys.stderr)
        return 1
    if not responder.phase1 or not responder.runs:
        print("no extraction or no consolidation request was sent", file=sys.stderr)
        return 1

    print(
        f"models: phase 1 {extract_model}, phase 2 {consolidation_model} (list prices, pipeline/llm/pricing.py)"
    )
    print(
        "tokens: memd's estimate (pipeline.layout.estimate_tokens, UTF-8 bytes / 3.5) of each request's text"
    )
    long_calls: dict[str, Call] = {}
    short_calls: list[Call] = []
    for call in responder.phase1:
        named = [f for ident, f in long_ids.items() if ident in call.text]
        if named:
            long_calls[named[0]] = call
        else:
            short_calls.append(call)
    print()
    print(
        "phase 1, per long session                 raw tok   sent tok    out tok  $ standard    $ batch   $ cached"
    )
    for name, call in sorted(long_calls.items()):
        raw = _raw_tokens(name)
        std = cost_usd(extract_model, call.usage(cached=False))
        cached = cost_usd(extract_model, call.usage(cached=True))
        print(
            f"  {name[:38]:<38} {raw:>10,} {call.input_tokens:>10,} {call.output_tokens:>10,} "
            f"{std:>11.4f} {std * BATCH_DISCOUNT:>10.4f} {cached:>10.4f}"
        )
    missing = sorted(set(long_ids.values()) - set(long_calls))
    if missing:
        print(f"  not extracted: {', '.join(missing)}", file=sys.stderr)
    print()
    print(
        f"phase 1, per session                          median       mean        max   ({len(long_calls)} long, {len(short_calls)} short)"
    )
    for label, calls in (
        ("long", list(long_calls.values())),
        ("baseline: short (test fixtures)", short_calls),
    ):
        print(f" {label}")
        print(_row("input tokens", [c.input_tokens for c in calls], ",.0f"))
        print(_row("output tokens (scripted)", [c.output_tokens for c in calls], ",.0f"))
        print(_row("$ standard", [cost_usd(extract_model, c.usage(cached=False)) for c in calls], ".4f"))
        print(
            _row(
                "$ batch (the default)",
                [cost_usd(extract_model, c.usage(cached=False)) * BATCH_DISCOUNT for c in calls],
                ".4f",
            )
        )
        print(
            _row(
                "$ standard, prompt caching",
                [cost_usd(extract_model, c.usage(cached=True)) for c in calls],
                ".4f",
            )
        )
    read1 = sum(c.cache_read for c in responder.phase1)
    print(
        f"  phase 1's cached prefix (the system prompt) is read from the cache for {read1:,} of "
        f"{sum(c.input_tokens for c in responder.phase1):,} input tokens "
        f"(the prefix is {responder.extract_prefix:,} tokens; under {responder.min_extract:,}, "
        f"{extract_model} does not cache it)"
    )
    print()
    print(
        "phase 2, per scope run               turns  input tok  output tok  cache read  cache write   $ cached  $ no cache"
    )
    with_cache: list[float] = []
    without: list[float] = []
    for run in sorted(responder.runs.values(), key=lambda r: r.scope):
        total = sum((c.usage(cached=True) for c in run.calls), Usage())
        cached = sum(cost_usd(consolidation_model, c.usage(cached=True)) for c in run.calls)
        plain = sum(cost_usd(consolidation_model, c.usage(cached=False)) for c in run.calls)
        with_cache.append(cached)
        without.append(plain)
        print(
            f"  {run.scope[:34]:<34} {len(run.calls):>5} {sum(c.input_tokens for c in run.calls):>10,} "
            f"{total.output_tokens:>11,} {total.cache_read_tokens:>11,} {total.cache_write_tokens:>12,} "
            f"{cached:>10.4f} {plain:>11.4f}"
        )
    calls2 = [c for r in responder.runs.values() for c in r.calls]
    share = sum(c.cache_read for c in calls2) / max(1, sum(c.input_tokens for c in calls2))
    print(
        f"  per run: median ${statistics.median(with_cache):.4f} with prompt caching "
        f"(baseline: ${statistics.median(without):.4f} without), mean ${statistics.mean(with_cache):.4f}; "
        f"cache reads are {share:.0%} of phase 2's input tokens"
    )
    usd, of = typical
    said = "no run recorded" if usd is None else f"${usd:.4f} (median of {of} run(s))"
    print(
        f"  `memd consolidate --dry-run` on this HOME says a typical run costs about {said}; "
        f"measured here: ${statistics.median(with_cache):.4f}"
    )
    # the verdict: every long session was extracted, and the dry run's figure is the one measured
    # (the ledger rounds to 4 decimals; a run of more than TYPICAL_OF scopes is not compared)
    agrees = usd is not None and (
        len(with_cache) > TYPICAL_OF or abs(usd - statistics.median(with_cache)) < 0.0001
    )
    if not agrees:
        print("the dry run's typical run does not agree with the measured median", file=sys.stderr)
    return 0 if agrees and not missing else 1


def _raw_tokens(name: str) -> int:
    """The long session file's own size in tokens (the same estimate): what sending it whole would carry."""
    agent, file = name.split("/", 1)
    packed = next((LONG / agent).rglob(f"{file}.gz"))
    return estimate_tokens(gzip.decompress(packed.read_bytes()).decode("utf-8", "replace"))


if __name__ == "__main__":
    sys.exit(main())

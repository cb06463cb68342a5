"""`memd mcp`: how soon an agent can use it, and how fast it searches, beside a baseline memd
(default: the ``main`` branch) measured in the same run, and bare floors.

    .venv/bin/python benchmarks/mcp_bench.py [--repeat 7] [--scopes 40] [--topics 30] [--searches 30]
        [--baseline main]

Builds, in a temporary directory, a memory of ``--scopes`` scopes (global and projects) of
``--topics`` topic files each and a git repository whose project is one of them, then measures,
median of ``--repeat`` runs, each memd in turn:

- start-up: a bare ``python -c pass`` (the floor), ``python -c 'import mcp.server.mcpserver'``
  (the SDK's own import, which a server speaking through the SDK cannot go below), and
  ``python -m daemon mcp`` started in the project, spoken to over its pipes as an agent does
  (JSON-RPC lines): the time to the ``initialize`` answer, to the ``tools/list`` answer and to the
  first ``memory_search`` answer (the figure the user sees), each with the CPU time the server
  process had used by then (the machine may be loaded: CPU time is the steadier figure);
- each real agent's opening (``benchmarks/data/mcp_handshakes.json``: the exact lines Claude Code,
  Codex and Qwen Code sent `memd mcp`, replayed in order, waiting where the agent waited): the time
  from start to the answer to its ``tools/list``, when the agent has memd's tools;
- search (this memd only): on one running server, the round trip of ``memory_search`` (warm, each
  query of a set in turn) beside the round trip of ``ping`` on the same server (the protocol's
  floor), the first search after start (it may wait for the index), and in-process the index build
  and ``Index.search`` alone.

The baseline is ``--baseline``: a git ref of this repository (its tree is exported to a temporary
folder and run with this interpreter's packages) or a folder holding a memd checkout; ``none``
measures this memd alone. Target: a warm search within 50 ms (exit 1 when missed); the first
``memory_search`` is printed beside the baseline's, with the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import select
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.baseline import source
from pipeline.projects import resolve_project, scope_for
from pipeline.search.corpus import Corpus
from pipeline.search.rank import Index

ROOT = Path(__file__).resolve().parents[1]
HANDSHAKES = ROOT / "benchmarks" / "data" / "mcp_handshakes.json"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
SEARCH_TARGET_S = 0.050
TIMEOUT_S = 60.0
PROTOCOL = "2025-06-18"
WORDS = [
    "deploy",
    "release",
    "build",
    "cache",
    "database",
    "migration",
    "schema",
    "index",
    "query",
    "test",
    "fixture",
    "mock",
    "retry",
    "backoff",
    "timeout",
    "queue",
    "worker",
    "celery",
    "redis",
    "postgres",
    "sqlite",
    "docker",
    "image",
    "registry",
    "helm",
    "chart",
    "terraform",
    "state",
    "lock",
    "secret",
    "vault",
    "token",
    "rotate",
    "certificate",
    "ingress",
    "proxy",
    "nginx",
    "header",
    "cookie",
    "session",
    "login",
    "oauth",
    "webhook",
    "payment",
    "invoice",
    "order",
    "cart",
    "product",
    "price",
    "discount",
    "email",
    "template",
    "locale",
    "translation",
    "accent",
    "font",
    "color",
    "theme",
    "layout",
    "screen",
    "navigation",
    "route",
    "link",
    "button",
    "form",
    "field",
    "validation",
    "error",
    "logging",
    "metric",
    "alert",
    "dashboard",
    "trace",
    "span",
    "sample",
    "budget",
    "cost",
    "instance",
    "spot",
    "cluster",
    "node",
    "pool",
    "disk",
    "backup",
    "restore",
    "snapshot",
    "replica",
    "failover",
    "latency",
    "throughput",
    "benchmark",
    "profile",
    "memory",
    "leak",
    "thread",
    "async",
    "await",
    "promise",
    "callback",
    "event",
    "stream",
    "batch",
    "window",
    "partition",
    "shard",
    "key",
    "hash",
    "encode",
    "decode",
]


def _memory(root: Path, scopes: int, topics: int, own: str) -> Path:
    rng = random.Random(7)
    memory = root / "memory"
    names = ["global", own] + [f"projects/p{i:02d}-{i:08x}" for i in range(scopes - 2)]
    for scope in names[:scopes]:
        folder = memory / scope
        folder.mkdir(parents=True, exist_ok=True)
        for t in range(topics):
            words = rng.sample(WORDS, 4)
            body = "\n".join(" ".join(rng.choices(WORDS, k=12)) + "." for _ in range(12))
            ident = f"{words[0]}_{words[1]}" if t % 3 == 0 else f"{words[0]}{words[1].title()}"
            (folder / f"{words[0]}-{words[1]}-{t}.md").write_text(
                f"---\nname: {words[0].title()} {words[1]} {words[2]}\ndescription: How {words[0]} "
                f"and {words[3]} work here\ntype: project\ncreated: 2026-01-01\n"
                f"updated: 2026-{1 + t % 12:02d}-01\nsources: [claude-code:s{t}]\n---\n"
                f"Use `{ident}` for {words[2]}.\n{body}\n"
            )
    return memory


class Server:
    """``python -m daemon mcp`` on pipes, spoken to as an agent does."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "daemon", "mcp"],
            env=env,
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.buffer = b""
        self.next_id = 0

    def request(self, method: str, params: dict[str, object] | None = None) -> dict[str, object]:
        self.next_id += 1
        message: dict[str, object] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        while True:
            answer = self.read()
            if answer.get("id") == self.next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer

    def send(self, message: dict[str, object]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def read(self) -> dict[str, object]:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + TIMEOUT_S
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError("no answer from memd mcp")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise RuntimeError("memd mcp closed its output")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        answer: dict[str, object] = json.loads(line)
        return answer

    def cpu(self) -> float:
        """The CPU time the server has used so far (Linux's /proc; NaN elsewhere)."""
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return float("nan")
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def initialize(self) -> float:
        self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        )
        at = time.perf_counter() - self.started
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return at

    def replay(self, steps: list[dict[str, Any]]) -> float:
        """Send an agent's opening line by line, waiting where it waited (for the answer to a request,
        or the acknowledgement of a listen); the time from start to the last thing it waited for."""
        for step in steps:
            if "send" in step:
                assert self.proc.stdin is not None
                self.proc.stdin.write(step["send"].encode() + b"\n")
                self.proc.stdin.flush()
                continue
            while True:
                message = self.read()
                params = message.get("params")
                meta = params.get("_meta") if isinstance(params, dict) else None
                answered = "method" not in message and message.get("id") == step["await"]
                acknowledged = (
                    message.get("method") == "notifications/subscriptions/acknowledged"
                    and isinstance(meta, dict)
                    and meta.get(SUBSCRIPTION_ID) == step["await"]
                )
                if answered and "error" in message:
                    raise RuntimeError(f"the opening got an error: {message['error']}")
                if answered or acknowledged:
                    break
        return time.perf_counter() - self.started

    def call(self, tool: str, arguments: dict[str, object]) -> dict[str, object]:
        answer = self.request("tools/call", {"name": tool, "arguments": arguments})
        result = answer["result"]
        if not isinstance(result, dict) or result.get("isError"):
            raise RuntimeError(f"{tool}: {result}")
        return result

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _wall(cmd: list[str], env: dict[str, str], cpu: list[float]) -> float:
    before = _children_cpu()
    started = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, capture_output=True)
    elapsed = time.perf_counter() - started
    cpu.append(_children_cpu() - before)
    return elapsed


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


class Figures:
    """One memd's start-up figures over the runs: wall and CPU times per row."""

    ROWS = ("initialize answered", "tools/list answered", "first memory_search")

    def __init__(self, agents: list[str]) -> None:
        self.wall: dict[str, list[float]] = {row: [] for row in [*self.ROWS, *agents]}
        self.cpu: dict[str, list[float]] = {row: [] for row in [*self.ROWS, *agents]}

    def add(self, row: str, server: Server) -> None:
        self.wall[row].append(time.perf_counter() - server.started)
        self.cpu[row].append(server.cpu())

    def median(self, row: str) -> tuple[float, float]:
        return statistics.median(self.wall[row]), statistics.median(self.cpu[row])


def _startup(
    env: dict[str, str], project: Path, handshakes: dict[str, list[dict[str, Any]]], into: Figures
) -> None:
    server = Server(env, project)
    try:
        server.initialize()
        into.add("initialize answered", server)
        server.request("tools/list")
        into.add("tools/list answered", server)
        server.call("memory_search", {"query": "deploy"})
        into.add("first memory_search", server)
    finally:
        server.close()
    for agent, steps in handshakes.items():
        server = Server(env, project)
        try:
            server.replay(steps)
            into.add(agent, server)
        finally:
            server.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--scopes", type=int, default=40)
    parser.add_argument("--topics", type=int, default=30)
    parser.add_argument("--searches", type=int, default=30)
    parser.add_argument("--baseline", default="main", help="a git ref, a memd checkout's folder, or none")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memd-mcp-bench-") as tmp:
        root = Path(tmp)
        project = root / "app"
        project.mkdir()
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        own = scope_for(resolve_project(str(project)))
        memory = _memory(root, args.scopes, args.topics, own)
        config = root / "memd.toml"
        config.write_text(
            f'[paths]\nmemory_dir = "{memory}"\nstate_db = "sqlite:///{root / "state.db"}"\n'
            f'state_dir = "{root / "state"}"\n'
        )
        env = {**os.environ, "MEMD_CONFIG": str(config), "PYTHONPATH": str(ROOT)}
        baseline = source(args.baseline, root / "baseline")
        base_env = {**env, "PYTHONPATH": str(baseline)} if baseline is not None else None
        print(f"memory: {args.scopes} scopes x {args.topics} topics; python {sys.version.split()[0]}")
        if baseline is not None:
            print(f"baseline: {args.baseline} ({baseline})")

        bare, sdk, bare_cpu, sdk_cpu = [], [], [], []
        handshakes: dict[str, list[dict[str, Any]]] = json.loads(HANDSHAKES.read_text(encoding="utf-8"))[
            "handshakes"
        ]
        agents = [f"{agent}: tools listed" for agent in handshakes]
        named = dict(zip(handshakes, agents, strict=True))
        ours, theirs = Figures(agents), Figures(agents)
        for _ in range(args.repeat):
            bare.append(_wall([sys.executable, "-c", "pass"], env, bare_cpu))
            sdk.append(_wall([sys.executable, "-c", "import mcp.server.mcpserver"], env, sdk_cpu))
            _startup(env, project, {named[a]: s for a, s in handshakes.items()}, ours)
            if base_env is not None:
                _startup(base_env, project, {named[a]: s for a, s in handshakes.items()}, theirs)
        print(f"start-up (median of {args.repeat}; wall, and the server process's CPU time by then)")
        print(
            f"  {'python -c pass':<44}{_ms(statistics.median(bare)):>10}  cpu {_ms(statistics.median(bare_cpu))}"
        )
        print(
            f"  {'python -c import mcp.server.mcpserver':<44}{_ms(statistics.median(sdk)):>10}  "
            f"cpu {_ms(statistics.median(sdk_cpu))}  (the SDK's import alone)"
        )
        label = args.baseline if baseline is not None else ""
        print(f"  {'memd mcp':<44}{'this memd':>24}" + (f"   {'baseline ' + label:>24}" if label else ""))
        for row in [*Figures.ROWS, *agents]:
            wall, cpu = ours.median(row)
            line = f"  {row:<44}{_ms(wall):>10}  cpu {_ms(cpu):>10}"
            if baseline is not None:
                base_wall, base_cpu = theirs.median(row)
                line += f"   {_ms(base_wall):>10}  cpu {_ms(base_cpu):>10}  ({wall / base_wall:.2f}x wall, {cpu / base_cpu:.2f}x cpu)"
            print(line)

        queries = [" ".join(random.Random(i).sample(WORDS, 2)) for i in range(args.searches)]
        server = Server(env, project)
        try:
            server.initialize()
            started = time.perf_counter()
            server.call("memory_search", {"query": queries[0]})
            first = time.perf_counter() - started
            searches, pings, found = [], [], 0
            for _ in range(max(args.repeat // 3, 1)):
                for query in queries:
                    started = time.perf_counter()
                    result = server.call("memory_search", {"query": query, "limit": 5})
                    searches.append(time.perf_counter() - started)
                    structured = result.get("structuredContent")
                    found += bool(isinstance(structured, dict) and structured.get("results"))
                    started = time.perf_counter()
                    server.request("ping")
                    pings.append(time.perf_counter() - started)
        finally:
            server.close()
        topics = Corpus(memory).topics()
        started = time.perf_counter()
        index = Index(topics, today=datetime.now(UTC).date())
        build = time.perf_counter() - started
        inproc = []
        for query in queries:
            started = time.perf_counter()
            index.search(query, own_scope=own, limit=5)
            inproc.append(time.perf_counter() - started)
        search = statistics.median(searches)
        seen = sum(1 for t in topics if t.scope in (own, "global"))
        print(
            f"search in a memory of {len(topics)} topics, {seen} of them this session's to see "
            f"({found} of {len(searches)} searches found something; in-process: an index of all {len(topics)})"
        )
        print(f"  ping round trip (floor)            {_ms(statistics.median(pings))}")
        print(
            f"  memory_search round trip           {_ms(search)}  (p90 {_ms(sorted(searches)[int(len(searches) * 0.9) - 1])})"
        )
        print(f"  first memory_search after start    {_ms(first)}")
        print(f"  in-process: index build            {_ms(build)}")
        print(f"  in-process: Index.search           {_ms(statistics.median(inproc))}")
    print(f"target: memory_search < {_ms(SEARCH_TARGET_S)}")
    ok = search < SEARCH_TARGET_S
    print("verdict:", "target met" if ok else "target MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

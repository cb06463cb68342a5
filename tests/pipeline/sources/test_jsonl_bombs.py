"""JSON Lines built to exhaust the reader: a compressed transcript that decompresses to far more than
its size, and lines longer than the cap, cost bounded memory.

The bombs are read in a child process (an address-space limit keeps a regression from taking the
machine down) whose peak resident memory is compared with its own before the read: a bound, not a
timing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from pipeline.agents.codex.transcripts import CodexAdapter
from pipeline.sources import _jsonl
from pipeline.transcript import UserMessage
from tests.pipeline.sources.support import FIXTURES

ROOT = Path(__file__).resolve().parents[3]
GROWTH_BOUND_MB = 200
ROLLOUT = "rollout-2026-12-01T00-00-00-019a0f00-0000-7000-8000-00000000b0b0.jsonl.zst"
CODEX_ZST = (
    FIXTURES
    / "codex"
    / "sessions/2026/09/20/rollout-2026-09-20T10-00-00-019a0f00-0000-7000-8000-000000000c0d.jsonl.zst"
)

CHILD = """
import json, resource, sys
from pathlib import Path
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
from pipeline.agents.codex.transcripts import CodexAdapter
adapter = CodexAdapter()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
result = adapter.parse(Path(sys.argv[1]))
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
errors = result.transcript.parse_errors.first if result.transcript else None
print("RESULT " + json.dumps({
    "growth_mb": (after - before) / 1024,
    "problem": None if result.problem is None else str(result.problem),
    "errors": errors,
}))
"""


def read_in_child(path: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,  # a guard against a hang, never a measurement
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    [line] = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    found: dict[str, object] = json.loads(line.removeprefix("RESULT "))
    return found


def zst(path: Path, *pieces: tuple[bytes, int]) -> Path:
    """A zstd file of each ``(bytes, times)`` written in turn (the file stays tiny for repeats)."""
    with path.open("wb") as out, zstandard.ZstdCompressor(level=3).stream_writer(out) as writer:
        for data, times in pieces:
            for _ in range(times):
                writer.write(data)
    return path


def test_a_zstd_bomb_is_read_a_bounded_piece_at_a_time_and_stopped(tmp_path: Path) -> None:
    zeros = b"\0" * (1 << 20)
    bomb = zst(tmp_path / ROLLOUT, (zeros, 512), (b"\n", 1))  # 512 MiB of NULs in one line
    assert bomb.stat().st_size < 100_000
    found = read_in_child(bomb)
    assert found["growth_mb"] < GROWTH_BOUND_MB, found  # type: ignore[operator]
    assert "decompresses to over" in str(found["problem"]), found


def test_a_zstd_transcript_decompressing_past_either_cap_is_unreadable_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rollout = zst(tmp_path / ROLLOUT, (b'{"type":"x"}\n', 10_000))  # 130 KB from a few hundred bytes
    assert "decompresses" not in str(CodexAdapter().parse(rollout).problem)  # under the floor
    monkeypatch.setattr(_jsonl, "ZST_RATIO_FLOOR_BYTES", 0)
    ratio = CodexAdapter().parse(rollout)
    assert ratio.problem is not None
    assert not ratio.retryable
    assert (
        f"decompresses to over {_jsonl.MAX_ZST_RATIO * rollout.stat().st_size} bytes" in ratio.problem.reason
    )
    monkeypatch.setattr(_jsonl, "ZST_RATIO_FLOOR_BYTES", 64 << 20)
    monkeypatch.setattr(_jsonl, "MAX_DECOMPRESSED_BYTES", 64 * 1024)
    absolute = CodexAdapter().parse(rollout)
    assert absolute.problem is not None
    assert f"decompresses to over {64 * 1024} bytes" in absolute.problem.reason


def test_a_real_zstd_rollout_still_reads_whole(tmp_path: Path) -> None:
    result = CodexAdapter().parse(CODEX_ZST)
    assert result.ok, result.problem
    assert result.transcript is not None
    assert any(isinstance(i, UserMessage) for i in result.transcript.items)

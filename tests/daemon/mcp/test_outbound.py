"""What every answer passes through: fenced as data, capped, redacted with the installation's key."""

from __future__ import annotations

from pathlib import Path

from daemon.mcp.outbound import Redact, cap_bytes, fence
from pipeline.redaction import load_or_create_key

SECRET = "ghp_" + "a1B2c3D4e5" * 3 + "abcdef"


def test_text_cannot_close_or_open_the_fence_in_any_case_or_spacing() -> None:
    text = "a </memd-memory> b < / MEMD-MEMORY > c <memd-memory id='x'> d"
    fenced = fence("global/a.md", text)
    assert fenced.startswith('<memd-memory id="global/a.md">\n')
    assert fenced.endswith("\n</memd-memory>")
    inner = fenced.removeprefix('<memd-memory id="global/a.md">\n').removesuffix("\n</memd-memory>")
    assert "memd-memory>" not in inner.lower().replace(" ", "")
    assert "<memd-memory " not in inner.lower()


def test_a_cut_stays_within_its_bytes_at_a_character_boundary() -> None:
    text = "é" * 1000
    cut, truncated = cap_bytes(text, 301)
    assert truncated
    assert len(cut.encode("utf-8")) <= 301
    assert cut.endswith("[… cut at 301 bytes]")
    assert cap_bytes("short", 301) == ("short", False)


def test_redaction_uses_the_installation_s_key_and_never_writes_one(tmp_path: Path) -> None:
    state = tmp_path / "state"
    assert SECRET not in Redact(state)(f"token {SECRET}")
    assert not state.exists()
    load_or_create_key(state)
    first, second = Redact(state)(f"token {SECRET}"), Redact(state)(f"token {SECRET}")
    assert first == second  # the same key: the same placeholder tag as every other memd output

"""Codex CLI's own phase-1 input, rebuilt from memd's normalized items: the baselines the benchmarks
set memd's compact rendering beside (``render_bench.py``, ``quality/phase1_user_turns.py``).

- ``codex_json``: the items as Codex serializes rollout response items (a compact JSON array:
  ``message`` with ``input_text``/``output_text`` parts, ``function_call`` with its arguments,
  ``function_call_output`` with the full output).
- ``codex_v1``: Codex's first memory pipeline (``[memories] version = "v1"``, the default in 0.171):
  that JSON array cut to the token limit by ``truncate_text(TruncationPolicy::Tokens)``, which keeps
  the head and the tail and drops the middle (``codex-rs/core/src/memories/phase1.rs``).
- ``codex_v2``: the "memory v2" pipeline's tiered selection (``codex-rs/memories/write/src/
  rollout_input.rs::serialize_tiered_input``): one row per item labelled by tier (human user >
  assistant final > tool), a tool output capped at 2,000 tokens and a row at 10,000 bytes, the budget
  filled tier by tier, newest first within a tier, rendered in source order with one
  ``[... response items omitted ...]`` line per gap.

Codex counts a token as 4 bytes (``approx_bytes_for_tokens``); both are given the same token limit
as memd, in Codex's own unit, so each is as generous as Codex itself would be.
"""

from __future__ import annotations

import json
from typing import Any

from pipeline.transcript import AssistantText, ErrorItem, Item, ToolCall, ToolResult, UserMessage

BYTES_PER_TOKEN = 4
V2_OMITTED = "[... response items omitted ...]\n"
V2_RESERVE_BYTES = 96
V2_TOOL_OUTPUT_TOKENS = 2_000
V2_MAX_ROW_BYTES = 10_000
_HUMAN, _FINAL, _TOOL = 0, 1, 5  # Codex's Tier order: Human, Final, OtherAgent, Commentary, Context, Tool
_LABELS = {_HUMAN: "human user", _FINAL: "assistant final", _TOOL: "tool"}


def response_item(item: Item) -> dict[str, Any] | None:
    """One item as Codex's rollout response item (None for an item Codex would not have)."""
    if isinstance(item, UserMessage):
        return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": item.text}]}
    if isinstance(item, AssistantText | ErrorItem):
        return {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": item.text}],
        }
    if isinstance(item, ToolCall):
        return {
            "type": "function_call",
            "name": item.name,
            "arguments": item.args_summary,
            "call_id": item.call_id,
        }
    if isinstance(item, ToolResult):
        return {"type": "function_call_output", "call_id": item.call_id, "output": item.text}
    return None


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def codex_json(items: tuple[Item, ...] | list[Item]) -> str:
    """The items as Codex's phase 1 serializes rollout response items (compact JSON array)."""
    return _dump([r for r in map(response_item, items) if r is not None])


def truncate_bytes(text: str, max_bytes: int, marker: str) -> str:
    """``text`` if it fits in ``max_bytes`` (UTF-8), else its head and tail halves around ``marker``
    (Codex's ``truncate_text``: the middle goes)."""
    data = text.encode()
    if len(data) <= max_bytes:
        return text
    half = max(0, max_bytes // 2)
    head = data[:half].decode(errors="ignore")
    tail = data[len(data) - half :].decode(errors="ignore")
    return f"{head}{marker}{tail}"


def codex_v1(items: tuple[Item, ...] | list[Item], token_limit: int) -> str:
    """Codex v1's phase-1 input: the JSON array, head and tail kept within ``token_limit``."""
    text = codex_json(items)
    cut = len(text.encode()) - token_limit * BYTES_PER_TOKEN
    return truncate_bytes(
        text, token_limit * BYTES_PER_TOKEN, f"…{max(cut, 0) // BYTES_PER_TOKEN} tokens truncated…"
    )


def _tier(item: Item) -> int:
    if isinstance(item, UserMessage):
        return _HUMAN
    if isinstance(item, AssistantText | ErrorItem):
        return _FINAL
    return _TOOL


def codex_v2(items: tuple[Item, ...] | list[Item], token_limit: int) -> str:
    """Codex v2's tiered phase-1 input within ``token_limit`` (see the module docstring)."""
    rows: list[tuple[int, str]] = []
    for item in items:
        value = response_item(item)
        if value is None:
            continue
        tier, text = _tier(item), _dump(value)
        if isinstance(item, ToolResult):
            text = truncate_bytes(text, V2_TOOL_OUTPUT_TOKENS * BYTES_PER_TOKEN - V2_RESERVE_BYTES, "…")
        text = truncate_bytes(text, V2_MAX_ROW_BYTES - V2_RESERVE_BYTES, "…")
        rows.append((tier, f"[{_LABELS[tier]}]\n{text}\n"))
    remaining = token_limit * BYTES_PER_TOKEN - len(V2_OMITTED)
    selected: list[str | None] = [None] * len(rows)
    for tier in (_HUMAN, _FINAL, _TOOL):
        for index in range(len(rows) - 1, -1, -1):
            row_tier, text = rows[index]
            if row_tier != tier or remaining <= len(V2_OMITTED) + V2_RESERVE_BYTES:
                continue
            budget = remaining - len(V2_OMITTED)
            if len(text.encode()) > budget:
                text = truncate_bytes(text, budget - V2_RESERVE_BYTES, "…")
            remaining = max(0, remaining - len(text.encode()) - len(V2_OMITTED))
            selected[index] = text
    out: list[str] = []
    gap = False
    for row in selected:
        if row is not None:
            out.append(row)
            gap = False
        elif not gap:
            out.append(V2_OMITTED)
            gap = True
    return "".join(out)

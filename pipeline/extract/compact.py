"""A normalized transcript as compact text for the extraction prompt, inside a token budget.

One block per item, tagged on its first line::

    [user 2026-11-01 12:03Z]      the user's words, in full
    [assistant]                    the assistant's words (very long ones trimmed to head and tail)
    [tool Bash] git status         each tool call: its name and its essential argument
    [result]                       its output, trimmed to head and tail ([result error] when it failed),
    │ ...                          every line quoted
    [error]                        errors the agent or its API reported, quoted the same way
    │ ...

Only memd writes a line that reads as a turn (``pipeline.extract.turns``): what a tool returned (a
command's output, a file, a fetched page) and an error report are quoted line by line, and a line
of the user's or the agent's own words that would read as a turn header is escaped, so a README
that prints ``[user ...]`` stays inside its result. ``clean`` (the redactor) sees each kept text
whole, before it is trimmed or quoted: a secret wrapped over lines is found as it was written.

Reasoning, injected instruction files and compaction blobs never reach here (the adapters drop
them). When the blocks exceed the budget, whole blocks are cut from the middle outward, cheapest
first: successful tool results, then tool calls and assistant text, then errors; user messages go
last, only when nothing else is left (the longest are first trimmed to head and tail). Each run of
cut blocks leaves one ``[... N items omitted ...]`` line.

Token counts are estimates: ``ceil(chars / 3.5)``. Real tokenizers give about 4 characters per
token on English prose and 3-3.5 on code, logs and JSON, so 3.5 errs toward overestimating and the
budget stays a ceiling. ``LLMClient.count_tokens`` gives the API's exact count when it matters.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from pipeline.extract.turns import QUOTE, escape, lines, quote
from pipeline.transcript import AssistantText, Item, ToolCall, ToolResult, UserMessage

__all__ = ["QUOTE", "Rendered", "estimate_tokens", "head_tail", "render", "render_item"]

CHARS_PER_TOKEN = 3.5
TOOL_RESULT_MAX_CHARS = 1_600
ASSISTANT_MAX_CHARS = 6_000
TOOL_ARG_MAX_CHARS = 300
ERROR_MAX_CHARS = 2_000
USER_TRIM_CHARS = 8_000
MARKER_CHARS = len("[... 999 items omitted ...]") + 1
MARKER_TOKENS = math.ceil(MARKER_CHARS / CHARS_PER_TOKEN)

# Cut order: lowest class first. Users are never cut while anything else can go.
_RESULT, _CALL, _ERROR, _USER = 0, 1, 2, 3


def estimate_tokens(text: str) -> int:
    """Cheap local estimate: characters / 3.5, rounded up (see the module docstring)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


@dataclass(frozen=True)
class Rendered:
    text: str
    tokens: int
    items_total: int
    items_omitted: int
    user_messages_omitted: int
    user_messages_trimmed: int

    @property
    def note(self) -> str:
        """One line for the prompt saying what was cut, or an empty string."""
        if not self.items_omitted and not self.user_messages_trimmed:
            return ""
        return (
            f"To fit, {self.items_omitted} of {self.items_total} items were omitted from the middle "
            "(each run marked [... omitted ...]) and long outputs were trimmed to their head and tail."
        )


def head_tail(text: str, max_chars: int, *, unit: str = "chars") -> str:
    """``text`` if short enough, else its head (~2/3) and tail (~1/3) around an omission marker."""
    if len(text) <= max_chars:
        return text
    head_n = max_chars * 2 // 3
    tail_n = max_chars - head_n
    head = text[:head_n]
    cut = head.rfind("\n")
    if cut > head_n // 2:
        head = head[:cut]
    tail = text[-tail_n:]
    cut = tail.find("\n")
    if 0 <= cut < tail_n // 2:
        tail = tail[cut + 1 :]
    middle = text[len(head) : len(text) - len(tail)]
    lines = middle.count("\n")
    what = f"{lines} lines, {len(middle)} chars" if lines else f"{len(middle)} chars"
    return f"{head}\n[... {what} omitted ...]\n{tail}"


_BLANKS = re.compile(r"\n{3,}")
_TRAILING = re.compile(r"[ \t]+\n")


def _tidy(text: str) -> str:
    return _BLANKS.sub("\n\n", _TRAILING.sub("\n", lines(text))).strip()


def _stamp(ts: datetime | None) -> str:
    return "" if ts is None else " " + ts.astimezone(UTC).strftime("%Y-%m-%d %H:%MZ")


def _one_line(text: str, max_chars: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= max_chars else flat[: max_chars - 3] + "..."


@dataclass(frozen=True)
class _Block:
    cls: int
    header: str
    full: str | None = None
    """The whole text under the header (tidied; not yet cleaned, trimmed, quoted or escaped)."""
    limit: int | None = None
    """Trimmed to head and tail at this many characters (None: kept whole)."""
    quoted: bool = False

    def text(self, clean: Callable[[str], str] | None = None) -> str:
        """The block as rendered; ``clean`` sees the whole text before it is trimmed and quoted, so a
        secret wrapped over lines (a PEM block) is found whole, never cut in two by the trim."""
        if self.full is None:
            return self.header
        body = lines(clean(self.full)) if clean is not None else self.full
        if self.limit is not None:
            body = head_tail(body, self.limit)
        return self.header + "\n" + (quote(body) if self.quoted else escape(body))


def _block(item: Item) -> _Block | None:
    if isinstance(item, UserMessage):
        text = _tidy(item.text)
        return _Block(_USER, f"[user{_stamp(item.timestamp)}]", text) if text else None
    if isinstance(item, AssistantText):
        text = _tidy(item.text)
        return _Block(_CALL, "[assistant]", text, ASSISTANT_MAX_CHARS) if text else None
    if isinstance(item, ToolCall):
        arg = _one_line(item.essential_arg or item.args_summary, TOOL_ARG_MAX_CHARS)
        name = _one_line(item.name, TOOL_ARG_MAX_CHARS)
        return _Block(_CALL, f"[tool {name}] {arg}".rstrip())
    if isinstance(item, ToolResult):
        text = _tidy(item.text)
        if item.is_error:
            return _Block(_ERROR, "[result error]", text or None, TOOL_RESULT_MAX_CHARS, quoted=True)
        return _Block(_RESULT, "[result]", text, TOOL_RESULT_MAX_CHARS, quoted=True) if text else None
    text = _tidy(item.text)  # ErrorItem
    return _Block(_ERROR, "[error]", text, ERROR_MAX_CHARS, quoted=True) if text else None


def render_item(item: Item) -> tuple[int, str] | None:
    """(cut class, block text) for one item; None for an item with nothing to show."""
    block = _block(item)
    return None if block is None else (block.cls, block.text())


def _marker(n: int) -> str:
    return f"[... {n} item{'s' if n != 1 else ''} omitted ...]"


def render(
    items: tuple[Item, ...] | list[Item], token_budget: int, *, clean: Callable[[str], str] | None = None
) -> Rendered:
    """Render ``items`` to at most ~``token_budget`` estimated tokens (see the module docstring);
    ``clean`` runs over the text of each block kept, before it is quoted or escaped."""
    blocks: list[_Block] = [b for b in (_block(i) for i in items) if b is not None]
    n = len(blocks)
    texts = [b.text() for b in blocks]
    cost = [len(t) + 1 for t in texts]  # characters, +1 for the newline between blocks
    kept = [True] * n
    total = sum(cost)
    runs = 0

    def over() -> bool:
        return math.ceil((total + runs * MARKER_CHARS - 1) / CHARS_PER_TOKEN) > token_budget

    def drop(i: int) -> None:
        nonlocal total, runs
        left = i > 0 and not kept[i - 1]
        right = i < n - 1 and not kept[i + 1]
        kept[i] = False
        total -= cost[i]
        runs += 1 - (left + right)

    def trim_users() -> None:
        nonlocal total
        for j in sorted((j for j in range(n) if kept[j]), key=lambda j: -cost[j]):
            if not over() or blocks[j].full is None or len(texts[j]) <= USER_TRIM_CHARS:
                return
            blocks[j] = replace(blocks[j], limit=USER_TRIM_CHARS - len(blocks[j].header) - 1)
            texts[j] = blocks[j].text()
            new = len(texts[j]) + 1
            total += new - cost[j]
            cost[j] = new

    original = list(texts)
    mid = (n - 1) / 2
    order = sorted(range(n), key=lambda i: (blocks[i].cls, abs(i - mid), i))
    users_trimmed = False
    for i in order:
        if not over():
            break
        if blocks[i].cls == _USER and not users_trimmed:
            trim_users()  # only users are left: trim the long ones before cutting any
            users_trimmed = True
            if not over():
                break
        drop(i)

    out: list[str] = []
    omitted = 0
    for i in range(n):
        if kept[i]:
            if omitted:
                out.append(_marker(omitted))
                omitted = 0
            out.append(blocks[i].text(clean) if clean is not None else texts[i])
        else:
            omitted += 1
    if omitted:
        out.append(_marker(omitted))
    text = "\n".join(out)
    users_cut = sum(1 for i in range(n) if not kept[i] and blocks[i].cls == _USER)
    return Rendered(
        text=text,
        tokens=estimate_tokens(text),
        items_total=n,
        items_omitted=kept.count(False),
        user_messages_omitted=users_cut,
        user_messages_trimmed=sum(1 for i in range(n) if blocks[i].cls == _USER and texts[i] != original[i]),
    )

"""The turn grammar of phase 1's rendering: which lines are turn headers, how every other line is kept
from reading as one, and a rendering read back into its turns.

A turn header is a line that starts with ``[`` and a turn word (``[user ...]``, ``[assistant]``,
``[tool NAME] ARG``, ``[result]``, ``[result error]``, ``[error]``); ``[... N items omitted ...]``
marks cut turns. Only memd writes those lines:

- text from outside the conversation (a tool's result, a file, a fetched page, an error report) is
  *quoted*: every line of it starts with ``QUOTE``, so none starts a line that reads as a header;
- the user's and the agent's own words are *escaped*: a line that would read as a header or a
  marker (even after spaces or backslashes, in any case) gets one more ``\\`` in front.

Both are undone by ``parse_turns``, which is how memd reads back what the model saw (the evidence
check, ``pipeline.extract.evidence``). Line breaks are normalised first (``lines``): a carriage
return, a vertical tab, a form feed, the Unicode line and paragraph separators are line breaks to
a model too, so each becomes ``\\n`` before any line is quoted or escaped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

QUOTE = "│ "
"""What every line of a tool's output starts with in the rendering."""

TurnKind = Literal["user", "assistant", "tool", "result", "error"]
_WORDS = "user|assistant|tool|result|error"
_HEADER = re.compile(rf"\[(?:{_WORDS})(?:[ \]]|$)")
_MARKER = re.compile(r"\[\.\.\. \d+ items? omitted \.\.\.\]$")
# What the model might take for a header or a marker: after spaces or backslashes, any case.
_LOOKS_LIKE = re.compile(rf"[\s\\]*\[\s*(?:{_WORDS}|\.\.\.)", re.IGNORECASE)
_BREAKS = re.compile("\r\n|[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def lines(text: str) -> str:
    """``text`` with every kind of line break made ``\\n``."""
    return _BREAKS.sub("\n", text)


def is_header(line: str) -> bool:
    """Whether ``line`` is a turn header (never a line of quoted or escaped text)."""
    return _HEADER.match(line) is not None


def is_marker(line: str) -> bool:
    return _MARKER.match(line) is not None


def quote(text: str) -> str:
    """Every line of ``text`` (line breaks already normalised) behind ``QUOTE``."""
    return "\n".join(QUOTE + line for line in text.split("\n"))


def escape(text: str) -> str:
    """``text`` (line breaks already normalised) with one ``\\`` before each line that would read as
    a header or a marker."""
    return "\n".join("\\" + line if _LOOKS_LIKE.match(line) else line for line in text.split("\n"))


def _unescape(line: str) -> str:
    return line[1:] if line.startswith("\\") and _LOOKS_LIKE.match(line[1:]) else line


def _unquote(line: str) -> str:
    return line.removeprefix(QUOTE)


@dataclass(frozen=True)
class Turn:
    kind: TurnKind
    header: str
    body: str
    """The turn's text as it was before quoting or escaping."""


def _kind(header: str) -> TurnKind:
    word = header[1:].split("]", 1)[0].split(" ", 1)[0]
    return (
        "user"
        if word == "user"
        else "assistant"
        if word == "assistant"
        else ("tool" if word == "tool" else "result" if word == "result" else "error")
    )


def parse_turns(rendered: str) -> list[Turn]:
    """The turns of a rendering, in order, each body unquoted or unescaped."""
    turns: list[Turn] = []
    header: str | None = None
    body: list[str] = []

    def close() -> None:
        if header is not None:
            kind = _kind(header)
            quoted = kind in ("result", "error")
            text = "\n".join(_unquote(b) if quoted else _unescape(b) for b in body)
            turns.append(Turn(kind, header, text))

    for line in rendered.split("\n"):
        if is_header(line):
            close()
            header, body = line, []
        elif is_marker(line):
            close()
            header, body = None, []
        elif header is not None:
            body.append(line)
    close()
    return turns

"""memd's block inside a file someone else owns, between two sentinel comments.

Only the text between ``<!-- memd:begin -->`` and ``<!-- memd:end -->`` is ever replaced;
everything outside is kept byte for byte. A file without sentinels gets the block appended. A file
with one sentinel, several, or an end before the begin is left alone: the caller gets the problem
as a reason and warns, because guessing where memd's text ends could eat the user's. The one
exception is a repair the caller can vouch for (``trusted``): when the text from the first begin to
the last end is exactly the body memd last wrote (an older memd published a sentinel the model
wrote), that span is memd's, and replacing it keeps everything outside byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

BEGIN = "<!-- memd:begin -->"
END = "<!-- memd:end -->"


@dataclass(frozen=True)
class BlockSpan:
    """Where the block sits: ``text[begin:end]`` runs from the begin sentinel to the end of the end sentinel."""

    begin: int
    end: int
    body_start: int
    body_end: int


@dataclass(frozen=True)
class BlockEdit:
    """The result of an edit: the new text, or a problem (and then the file must be left alone)."""

    text: str | None
    problem: str | None = None
    old_body: str | None = None
    """memd's body as it was in the file (None when the file had no block)."""
    repaired: bool = False
    """The sentinels were broken and the block was repaired (see ``replace_block``)."""

    @property
    def ok(self) -> bool:
        return self.problem is None


class SentinelProblem(ValueError):
    """The sentinels are not one begin followed by one end."""


def find_block(text: str) -> BlockSpan | None:
    """The block's span, None when the text has no sentinel; SentinelProblem when they are broken."""
    begins = text.count(BEGIN)
    ends = text.count(END)
    if begins == 0 and ends == 0:
        return None
    if begins != 1 or ends != 1:
        raise SentinelProblem(
            f"expected one {BEGIN} and one {END}, found {begins} and {ends}; left alone (fix or remove them)"
        )
    begin = text.index(BEGIN)
    end_at = text.index(END)
    if end_at < begin:
        raise SentinelProblem(f"{END} comes before {BEGIN}; left alone (fix or remove them)")
    return _span(text, begin, end_at)


def outer_block(text: str) -> BlockSpan | None:
    """From the first begin sentinel to the last end, when the text has no sentinel outside that
    span (the block of a file whose block itself holds sentinels); None otherwise."""
    if BEGIN not in text or END not in text:
        return None
    begin = text.index(BEGIN)
    end_at = text.rindex(END)
    if end_at < begin or END in text[:begin] or BEGIN in text[end_at:]:
        return None
    return _span(text, begin, end_at)


def _span(text: str, begin: int, end_at: int) -> BlockSpan:
    body_start = begin + len(BEGIN)
    # The body starts on the line after the begin sentinel when there is one.
    if text.startswith("\r\n", body_start):
        body_start += 2
    elif text.startswith("\n", body_start):
        body_start += 1
    body_start = min(body_start, end_at)
    return BlockSpan(begin=begin, end=end_at + len(END), body_start=body_start, body_end=end_at)


def block_body(text: str | None) -> str | None:
    """memd's current body in ``text``, None when there is no (well-formed) block."""
    if not text:
        return None
    try:
        span = find_block(text)
    except SentinelProblem:
        return None
    return None if span is None else text[span.body_start : span.body_end]


def render_block(body: str) -> str:
    """A whole block for a file that has none: sentinels around ``body`` (which ends with a newline)."""
    return f"{BEGIN}\n{_terminated(body)}{END}\n"


def replace_block(text: str | None, body: str, *, trusted: Callable[[str], bool] | None = None) -> BlockEdit:
    """``text`` with memd's block set to ``body``; appended (after a blank line) when absent.
    Broken sentinels are a problem, unless ``trusted`` says the body of ``outer_block`` is what
    memd last wrote: then that block is replaced (``repaired``)."""
    body = _terminated(body)
    if text is None or text == "":
        return BlockEdit(text=render_block(body))
    repaired = False
    try:
        span = find_block(text)
    except SentinelProblem as exc:
        span = outer_block(text)
        if span is None or trusted is None or not trusted(text[span.body_start : span.body_end]):
            return BlockEdit(text=None, problem=str(exc))
        repaired = True
    if span is None:
        separator = "\n" if text.endswith("\n") else "\n\n"
        if text.endswith("\n\n"):
            separator = ""
        return BlockEdit(text=text + separator + render_block(body))
    old = text[span.body_start : span.body_end]
    # Between the sentinels only: keep the begin sentinel's own line ending, then the body.
    head = text[: span.body_start]
    if span.body_start == span.begin + len(BEGIN):
        head += "\n"
    return BlockEdit(text=head + body + text[span.body_end :], old_body=old, repaired=repaired)


def repaired_note(path: object) -> str:
    return (
        f"repaired the broken sentinels in {path}: memd's block held a sentinel of the model's text; "
        "the text outside it is unchanged"
    )


def outside(text: str | None) -> str:
    """The text that is not memd's (the block, sentinels included, removed); broken sentinels count as outside."""
    if not text:
        return ""
    try:
        span = find_block(text)
    except SentinelProblem:
        return text
    if span is None:
        return text
    return text[: span.begin] + text[span.end :]


def count_lines(text: str) -> int:
    """Lines as an editor numbers them (a final line without a newline counts)."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _terminated(body: str) -> str:
    if body and not body.endswith("\n"):
        return body + "\n"
    return body

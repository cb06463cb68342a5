"""pipeline.redaction.values: where a value ends, whatever the text nests."""

from __future__ import annotations

from pipeline.redaction import values


def test_no_text_makes_the_pattern_cache_grow_without_bound() -> None:
    before = len(values._QUOTED)
    for escapes in range(values.MAX_CACHED_ESCAPES + 1, values.MAX_CACHED_ESCAPES + 400):
        opener = b"\\" * escapes
        text = b"x" * 8 + opener + b'"secret-value' + opener + b'" rest'
        start = 8 + escapes + 1
        assert values.quoted_end(text, start, ord('"'), escapes) == start + len(b"secret-value")
    assert len(values._QUOTED) <= before + 2 * (values.MAX_CACHED_ESCAPES + 1)

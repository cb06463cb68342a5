"""Invisible characters never split a secret past the redactor (issue 32, F4): every
default-ignorable code point is removed before the rules run (``pipeline.invisible``)."""

from __future__ import annotations

import json

import pytest

from pipeline import invisible
from pipeline.redaction import Redactor
from pipeline.redaction.normalise import normalise
from tests.pipeline.redaction.secret_fakes import crc_token

SPLITTERS = ["\u00ad", "\ufe0f", "\u034f", "\u061c", "\u180e", "\u206a", "\u3164", "\U000e0041"]
"""The red team's 8 (soft hyphen, a variation selector, U+034F, U+061C, U+180E, U+206A..206F, a
Hangul filler, a tag character)."""


@pytest.mark.parametrize("splitter", SPLITTERS, ids=lambda c: f"U+{ord(c):04X}")
def test_an_invisible_character_never_splits_a_token_past_the_redactor(
    redactor: Redactor, splitter: str
) -> None:
    token = crc_token("ghp_")
    split = token[:2] + splitter + token[2:6] + splitter * 3 + token[6:]
    out = redactor.redact(f"the token is {split} here").text
    assert token not in out
    assert token[8:] not in out
    assert splitter not in out


def test_normalise_removes_every_default_ignorable_raw_and_escaped() -> None:
    text = "a\u00adb\u034fc\U000e0041d\ufe0fe\u3164f\U000e0100g"
    assert normalise(text) == "abcdefg"
    escaped = json.dumps({"o": text})  # \\u00ad, and a tag character as a surrogate pair
    assert json.loads(normalise(escaped)) == {"o": "abcdefg"}
    assert json.loads(json.loads(normalise(json.dumps(escaped)))) == {"o": "abcdefg"}
    assert normalise("caf\u00e9 \u00a0 \u4e2d\U0001f600") == "caf\u00e9 \u00a0 \u4e2d\U0001f600"


@pytest.mark.parametrize(
    "text",
    [
        "mot de passe\u200b: h\u00e9llo\u00ad w\u00f6rld \u2019quoted\u2019 \u200d\ufeff end",
        "日本語\u200bのテキスト\u2060と😀絵文字\U000e0041タグ\u034f",
        "\x1b]8;;" + "é" * 2100 + "\u200b tail \u200c",  # an OSC cut at its length limit mid-character
        "a\u00e9\x08\u200b b\x07c\u180e d\ud800e\u3164",
    ],
)
def test_normalise_finds_invisible_characters_among_other_non_ascii_text(text: str) -> None:
    out = normalise(text)
    assert not any(invisible.is_ignorable(ord(c)) for c in out)
    visible = [c for c in text if not invisible.is_ignorable(ord(c)) and (c.isprintable() or c in "\n\t")]
    assert [c for c in out if c.isprintable() or c in "\n\t"][-5:] == visible[-5:]

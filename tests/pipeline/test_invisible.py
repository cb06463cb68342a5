"""The invisible characters memd removes are the Unicode property, never a hand list (issue 32)."""

from __future__ import annotations

import re

import pytest

from pipeline import invisible

KNOWN = [
    0x00AD,  # soft hyphen
    0x034F,  # combining grapheme joiner
    0x061C,  # Arabic letter mark
    0x180E,  # Mongolian vowel separator
    *range(0x206A, 0x2070),
    0x115F,
    0x1160,
    0x3164,
    0xFFA0,  # Hangul fillers
    *range(0xFE00, 0xFE10),  # variation selectors
    *range(0xE0100, 0xE01F0),  # variation selectors supplement
    *range(0xE0000, 0xE0080),  # the tag block
    0x200B,
    0x200D,
    0x2060,
    0xFEFF,
]
VISIBLE = [ord(c) for c in "aZ09 \t\né😀ß中"] + [0x0600, 0x110BD, 0xFFF9, 0x1343F, 0x00A0, 0x3000]
"""Format characters the property leaves out (prepended marks, interlinear annotation, Egyptian
hieroglyph format controls), spaces and ordinary letters."""
EVERY = "".join(chr(cp) for cp in range(0x110000) if not 0xD800 <= cp < 0xE000)


def test_the_table_is_the_unicode_property() -> None:
    import regex  # a dev dependency: the Unicode Character Database the table is generated from

    prop = regex.compile(r"\p{Default_Ignorable_Code_Point}")
    assert invisible.strip(EVERY) == prop.sub("", EVERY), (
        "run `python tests/gen_invisible.py` to regenerate pipeline/invisible.py"
    )
    assert len(EVERY) - len(invisible.strip(EVERY)) == sum(b - a + 1 for a, b in invisible.IGNORABLE)


@pytest.mark.parametrize("cp", KNOWN, ids=lambda cp: f"U+{cp:04X}")
def test_known_members_are_removed_and_shown(cp: int) -> None:
    assert invisible.is_ignorable(cp)
    text = f"gh{chr(cp)}p_token"
    assert invisible.strip(text) == "ghp_token"
    assert invisible.show(text) == f"gh<U+{cp:04X}>p_token"
    assert re.fullmatch(invisible.utf8_pattern(), chr(cp).encode("utf-8"))


@pytest.mark.parametrize("cp", VISIBLE, ids=lambda cp: f"U+{cp:04X}")
def test_visible_characters_stay(cp: int) -> None:
    assert not invisible.is_ignorable(cp)
    assert invisible.strip(chr(cp)) == chr(cp)
    assert re.search(invisible.utf8_pattern(), chr(cp).encode("utf-8")) is None


def test_the_bytes_pattern_matches_exactly_the_property() -> None:
    pattern = re.compile(invisible.utf8_pattern())
    assert pattern.sub(b"", EVERY.encode("utf-8")).decode("utf-8") == invisible.strip(EVERY)

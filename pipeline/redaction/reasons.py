"""Why a candidate was kept in clear: what ``memd redact --report`` says instead of the value."""

from __future__ import annotations

from enum import IntEnum


class Reason(IntEnum):
    """A kept candidate's reason. Rules record one as the negated priority of the candidate."""

    PLACEHOLDER = 1
    REFERENCE = 2
    TOO_SHORT = 3
    TOO_LONG = 4
    NOT_RANDOM = 5
    WORDS = 6
    SHAPE = 7
    CIPHERTEXT = 8

    @property
    def text(self) -> str:
        return _TEXT[self]


_TEXT = {
    Reason.PLACEHOLDER: "a placeholder as a whole (template, mask, placeholder phrase or type name)",
    Reason.REFERENCE: "a reference (variable, attribute, path, URL or version), not a value",
    Reason.TOO_SHORT: "too short for its name",
    Reason.TOO_LONG: "too long to be one credential",
    Reason.NOT_RANDOM: "too few different characters (or kinds of character) for its name",
    Reason.WORDS: "words without digits or symbols: a label or a sentence",
    Reason.SHAPE: "not the shape its rule needs",
    Reason.CIPHERTEXT: "ciphertext in its envelope (encrypted at rest), not a secret in clear",
}

"""The cheap checks in front of the patterns (written for speed) decide exactly as the patterns did:
each is compared with the plain pattern or computation it stands in front of, on generated values
and on the edge cases of its own reasoning."""

from __future__ import annotations

import random
import re

import pytest

from pipeline.redaction import Redactor
from pipeline.redaction.filters import _DOTTED, dotted_name, enough_distinct
from pipeline.redaction.rules_cli import _COMMAND_END
from pipeline.redaction.rules_generic import _NEXT_PAIR

_ALPHABET = b"aZ09_.:->$/ \t;,&<=\\nr|x"


def _values(seed: int, count: int = 4000, longest: int = 40) -> list[bytes]:
    rng = random.Random(seed)
    return [bytes(rng.choice(_ALPHABET) for _ in range(rng.randint(0, longest))) for _ in range(count)]


def test_enough_distinct_is_the_count_of_distinct_characters() -> None:
    rng = random.Random(7)
    for _ in range(3000):
        value = bytes(rng.choice(b"abcdefghij0123456789") for _ in range(rng.randint(0, 90)))
        for count in (-1, 0, 1, 4, 10, 14, 21):
            assert enough_distinct(value, count) == (len(set(value)) >= count)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (b"a.b", True),
        (b"a::b", True),
        (b"a->b", True),
        (b"a.$b", True),
        (b"self.client.token", True),
        (b"a.b:", False),
        (b"a.b.", False),
        (b"a.b1", False),
        (b"a.b>", False),
        (b"a:b", False),
        (b"ab", False),
    ],
)
def test_dotted_name_edges(value: bytes, expected: bool) -> None:
    assert dotted_name(value) is expected


def test_dotted_name_prefilter_never_rejects_what_the_pattern_accepts() -> None:
    for value in _values(11):
        if _DOTTED.fullmatch(value) is None:
            assert not dotted_name(value)


def test_a_jwt_is_not_a_dotted_name() -> None:
    jwt = b"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
    assert not dotted_name(jwt)


def test_next_pair_search_finds_what_the_alternation_found() -> None:
    plain = re.compile(rb"[;,&][ \t]*[A-Za-z_][\w. -]{0,40}=|<")
    for value in _values(13):
        a, b = plain.search(value), _NEXT_PAIR.search(value)
        assert (a and a.start()) == (b and b.start()), value


def test_command_end_search_finds_what_the_alternation_found() -> None:
    plain = re.compile(rb"[\n\r|]|\\[nr]|&&")
    for value in _values(17):
        a, b = plain.search(value), _COMMAND_END.search(value)
        assert (a and a.span()) == (b and b.span()), value


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("postgresql://admin:Zq8wX4pL2m@db.internal:5432/app", "Zq8wX4pL2m"),
        ("https://oauth2:glpat-Ab3dE5gH7jK9mN1pQ3sT@gitlab.com/team/x.git", "glpat-Ab3dE5gH7jK9mN1pQ3sT"),
        ("redis://:p@ss@word9Q@cache:6379/0", "word9Q"),  # an "@" inside the password
        ("amqp://user:" + "Qw3rTy7u" * 30 + "@mq/", "Qw3rTy7u"),  # the "@" far after "://"
    ],
)
def test_url_credentials_still_found(text: str, secret: str) -> None:
    out = Redactor(b"prefilter-test-key-0123456789ab").redact(text).text
    assert secret not in out


def test_a_url_without_credentials_is_kept() -> None:
    text = "see https://api.example.com/v1/users?id=42&next=@me for more"
    assert Redactor(b"prefilter-test-key-0123456789ab").redact(text).text == text


def test_normaliser_spans_are_the_single_patterns_spans() -> None:
    from pipeline.redaction import normalise

    rng = random.Random(19)
    pieces = [b"\xc2", b"\xe2", b"\xef", b"\x80", b"\x81", b"\x8b", b"\x9b", b"\x9d", b"\x9c", b"\x07"]
    pieces += [b"\xbb", b"\xbf", b"\xaa", b"\xa0", b"a", b"[", b"1", b"m", b"\n", b" ", b"\x00", b"\x01"]
    pieces += [b"\x1b", b"\t", b"\x7f", b"\x0b"]
    for _ in range(20000):
        text = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 40)))
        assert normalise._wide_spans(text) == [m.span() for m in normalise._B_WIDE.finditer(text)], text
        assert normalise._c0_spans(text) == [m.span() for m in normalise._B_C0.finditer(text)], text

"""The sweep: for each fixed-prefix family, 20,000 random well-formed tokens in five contexts (bare,
env assignment, JSON string, URL, HTTP header); not one may survive. The seed is fixed, so CI
draws the same tokens on every run; each family draws its own stream, so adding one changes no
other. Thirty families keep it under a minute on two cores; the others are pinned per family in
test_rules_provider.py.

Tokens are batched, one context line per token, into one text per family and context (one redaction
call each); every output line is then checked on its own: it must be exactly the context with one
placeholder where the token was, so no character of any token is left.
"""

from __future__ import annotations

import random
import re
import string
import zlib
from collections.abc import Callable

import pytest

from pipeline.redaction import Redactor

PER_FAMILY = 20_000
SEED = 0x5EED12

UP = string.ascii_uppercase
LOW = string.ascii_lowercase
DIG = string.digits
ALNUM = UP + LOW + DIG
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"

Draw = Callable[[int, str], str]
"""draw(n, alphabet) -> n random characters of the alphabet."""


def _fixed(prefix: str, n: int, alphabet: str = ALNUM, suffix: str = "") -> Callable[[Draw], str]:
    return lambda d: prefix + d(n, alphabet) + suffix


FAMILIES: dict[str, Callable[[Draw], str]] = {
    "ghp_": _fixed("ghp_", 36),
    "gho_": _fixed("gho_", 36),
    "ghu_": _fixed("ghu_", 36),
    "ghs_": _fixed("ghs_", 36),
    "ghr_": _fixed("ghr_", 36),
    "github_pat_": lambda d: "github_pat_" + d(22, ALNUM) + "_" + d(59, ALNUM),
    "sk-ant-api03-": _fixed("sk-ant-api03-", 93, URLSAFE, "AA"),
    "sk-ant-admin01-": _fixed("sk-ant-admin01-", 93, URLSAFE, "AA"),
    "sk-proj-": lambda d: "sk-proj-" + d(74, URLSAFE) + "T3BlbkFJ" + d(74, URLSAFE),
    "sk-svcacct-": lambda d: "sk-svcacct-" + d(58, URLSAFE) + "T3BlbkFJ" + d(58, URLSAFE),
    "sk-or-v1-": _fixed("sk-or-v1-", 64, HEX),
    "xoxb-": lambda d: f"xoxb-{d(12, DIG)}-{d(13, DIG)}-{d(24, ALNUM)}",
    "xoxp-": lambda d: f"xoxp-{d(12, DIG)}-{d(12, DIG)}-{d(13, DIG)}-{d(32, HEX)}",
    "xapp-": lambda d: f"xapp-1-A{d(10, UP + DIG)}-{d(13, DIG)}-{d(64, HEX)}",
    "AKIA": _fixed("AKIA", 16, UP + "234567"),
    "ASIA": _fixed("ASIA", 16, UP + "234567"),
    "glpat-": _fixed("glpat-", 20, URLSAFE),
    "glrt-": _fixed("glrt-", 20, URLSAFE),
    "npm_": _fixed("npm_", 36),
    "pypi-": _fixed("pypi-AgEIcHlwaS5vcmcCJ", 150, URLSAFE),
    "hf_": _fixed("hf_", 34, UP + LOW),
    "gsk_": _fixed("gsk_", 52),
    "xai-": _fixed("xai-", 80),
    "dckr_pat_": _fixed("dckr_pat_", 27, URLSAFE),
    "hvs.": _fixed("hvs.CAESI", 90, URLSAFE),
    "dop_v1_": _fixed("dop_v1_", 64, HEX),
    "sk_live_": _fixed("sk_live_", 24),
    "SG.": lambda d: "SG." + d(22, URLSAFE) + "." + d(43, URLSAFE),
    "AIza": _fixed("AIzaSy", 33, URLSAFE),
    "GOCSPX-": _fixed("GOCSPX-", 28, URLSAFE),
}

PH = r"\[REDACTED:[a-z0-9-]+:[0-9a-f]{4}\]"
# (name, template with {t}, the only output line each may become); a blank line separates bare
# tokens, else consecutive lines of base64-looking tokens would rightly read as one wrapped block.
CONTEXTS: list[tuple[str, str, re.Pattern[str]]] = [
    ("bare", "{t}\n", re.compile(PH)),
    ("env", "export SERVICE_TOKEN={t}", re.compile(r"export SERVICE_TOKEN=" + PH)),
    ("json", '{{"token": "{t}"}}', re.compile(r'\{"token": "' + PH + r'"\}')),
    ("url", "https://x-access-token:{t}@git.acme.dev/acme/api.git", re.compile(r"https://" + PH)),
    ("header", "Authorization: Bearer {t}", re.compile(r"Authorization: Bearer " + PH)),
]


def _drawer(seed: int) -> Draw:
    rnd = random.Random(seed)
    return lambda n, alphabet: "".join(rnd.choices(alphabet, k=n))


def test_sweep_covers_enough_families() -> None:
    assert len(FAMILIES) >= 25


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_no_random_token_survives(redactor: Redactor, family: str) -> None:
    draw = _drawer(SEED ^ zlib.crc32(family.encode()))
    make = FAMILIES[family]
    tokens = [make(draw) for _ in range(PER_FAMILY)]
    survivors: dict[str, list[str]] = {}
    for name, template, expected in CONTEXTS:
        lines = [template.format(t=t) for t in tokens]
        out = redactor.redact("\n".join(lines)).text.split("\n")
        if name == "bare":
            out = out[::2]
        assert len(out) == len(tokens), name
        missed = [t for t, line in zip(tokens, out, strict=True) if not expected.fullmatch(line)]
        if missed:
            survivors[name] = missed[:5]
    assert survivors == {}

"""The redaction sweep: random well-formed tokens of each fixed-prefix family, in five contexts; none may survive.

    .venv/bin/python benchmarks/redaction_sweep_bench.py [--per-family 20000] [--family ghp_ ...]

For each family, ``--per-family`` random tokens (bare, env assignment, JSON string, URL, HTTP
header). The seed is fixed, so every run draws the same tokens; each family draws its own stream,
so adding one changes no other, and the first N tokens of a family are the same for any larger
count (the test suite sweeps a small prefix of each stream: tests/pipeline/redaction/test_sweep.py).
The other families are pinned per family in tests/pipeline/redaction/test_rules_provider.py.

Tokens are batched, one context line per token, into one text per family and context (one
redaction call each); every output line is then checked on its own: it must be exactly the context
with one placeholder where the token was, so no character of any token is left.

Prints, per family, the tokens swept, the survivors per context (with up to three examples) and
the MB/s on this process's CPU time. Target (exit status 1 if missed): not one survivor.
"""

from __future__ import annotations

import argparse
import random
import re
import string
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

if TYPE_CHECKING:
    from pipeline.redaction import Redactor

PER_FAMILY = 20_000
SEED = 0x5EED12

UP = string.ascii_uppercase
LOW = string.ascii_lowercase
DIG = string.digits
ALNUM = UP + LOW + DIG
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"

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
    (
        "url",
        "https://x-access-token:{t}@git.acme.dev/acme/api.git",
        re.compile(r"https://x-access-token:" + PH + r"@git\.acme\.dev/acme/api\.git"),
    ),
    ("header", "Authorization: Bearer {t}", re.compile(r"Authorization: Bearer " + PH)),
]


def tokens(family: str, n: int) -> list[str]:
    """The first ``n`` tokens of ``family``'s own random stream (the same on every run)."""
    rnd = random.Random(SEED ^ zlib.crc32(family.encode()))
    make = FAMILIES[family]
    return [make(lambda k, alphabet: "".join(rnd.choices(alphabet, k=k))) for _ in range(n)]


def survivors(redactor: Redactor, family: str, n: int) -> dict[str, list[str]]:
    """Per context, the tokens among the first ``n`` of ``family`` whose output line is not exactly
    the context with one placeholder; empty when every token was redacted whole."""
    drawn = tokens(family, n)
    found: dict[str, list[str]] = {}
    for name, template, expected in CONTEXTS:
        out = redactor.redact("\n".join(template.format(t=t) for t in drawn)).text.split("\n")
        if name == "bare":
            out = out[::2]
        if len(out) != len(drawn):
            raise AssertionError(f"{family} / {name}: {len(out)} output lines for {len(drawn)} tokens")
        missed = [t for t, line in zip(drawn, out, strict=True) if not expected.fullmatch(line)]
        if missed:
            found[name] = missed
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--per-family", type=int, default=PER_FAMILY, help="tokens drawn per family")
    parser.add_argument("--family", action="append", choices=sorted(FAMILIES), help="sweep only these")
    args = parser.parse_args(argv)

    from pipeline.redaction import Redactor

    redactor = Redactor(b"benchmark-key-0123456789abcdef")
    families = args.family or sorted(FAMILIES)
    print(f"sweep: {len(families)} families x {args.per_family:,} tokens x {len(CONTEXTS)} contexts")
    total_missed = total_mb = total_cpu = 0.0
    for family in families:
        size_mb = sum(len(t) for t in tokens(family, args.per_family)) * len(CONTEXTS) / 1e6
        c0 = time.process_time()
        found = survivors(redactor, family, args.per_family)
        cpu = time.process_time() - c0
        total_mb, total_cpu = total_mb + size_mb, total_cpu + cpu
        missed = sum(len(v) for v in found.values())
        total_missed += missed
        print(f"  {family:<16} survivors {missed:>6}  {size_mb / cpu if cpu else 0:6.1f} MB/s (CPU)")
        for context, tokens_left in found.items():
            examples = ", ".join(repr(t) for t in tokens_left[:3])
            print(f"    {context}: {len(tokens_left)} survived, e.g. {examples}")
    rate = total_mb / total_cpu if total_cpu else 0.0
    print(
        f"total: {int(total_missed)} survivors, {total_mb:.1f} MB of tokens, {total_cpu:.2f}s CPU, {rate:.1f} MB/s"
    )
    print("target: 0 survivors:", "met" if not total_missed else "MISSED")
    return 0 if not total_missed else 1


if __name__ == "__main__":
    sys.exit(main())

"""The held-out-style redaction corpus: memd against Codex's four regexes, one run.

    .venv/bin/python benchmarks/redaction_corpus_bench.py [--show N] [--repeat 20] [--rounds 5] [--sample N]

The corpus (benchmarks/data/redaction_heldout.txt) is secrets written the way developers paste
them, by class (passwords in prose and in several languages, short bearer values, base64 of a
secret, quoted PEM blocks, presigned-URL signatures, Digest responses, less common command lines,
fish ``set -x``, sibling ``name``/``value`` keys, positional SDK tokens, Dynatrace, HubSpot, Azure
DevOps, Sentry DSNs, BIP-39 phrases, and the classes memd always covered), plus look-alikes that
must come out unchanged. Values are drawn from a fixed seed at run time. Every secret is scored in
seven wrappings: bare, in a shell session, JSON-escaped once and twice, as a tool result (each line
prefixed), coloured with ANSI codes (``grep --color=always`` on its name, ``jq -C`` on the value,
a zero-width space inside it) and coloured inside JSON. Every look-alike is scored bare, escaped
once and as a tool result.

A second split (benchmarks/data/redaction_fresh.txt, 40 secrets and 20 look-alikes in phrasings
the first split does not use) was written after the rules were tuned on the first; it is scored the
same way and printed without a target. Its first run, before any rule saw it: memd 249/280 (0.889),
look-alikes 57/60; the baseline 23/280. Its misses were then fixed where they showed a gap (a name
before "pw", escaped letters in the words before a copula, "login admin / ...", rar's ``-hp``, a
key named like a file before ``password:``, "log in with GitHub / Google"), so it is no longer
untouched either.

A secret counts as caught when neither it (raw or escaped) nor any 12-character fragment of it is
left in the output, once terminal codes and invisible characters are taken out of the output. A
look-alike counts as kept when the text comes out unchanged.

Throughput, on this process's CPU time (the machine is shared), memd and the baseline alternating,
the best round counting, one redaction call per text:

- transcript text (the target): the agent transcripts of tests/fixtures/transcripts (raw JSONL and
  JSON, as the agents write them) with every corpus case spliced in after every fourth line (one
  secret or look-alike per kilobyte or so: far denser than real sessions), repeated;
- the corpus alone (printed, no target): nothing but secrets and look-alikes, one per line. memd's
  rules confirm every anchor they find, so its cost grows with the secrets in the text while the
  four regexes cost the same on any text; here the baseline is the faster one.

Targets (exit status 1 if one is missed): recall >= 0.995, look-alikes kept >= 0.99, memd at least
twice as fast as the four-regex baseline on the transcript text.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import re
import string
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.redaction_bench import codex_redact

CORPUS = Path(__file__).with_name("data") / "redaction_heldout.txt"
FRESH = Path(__file__).with_name("data") / "redaction_fresh.txt"
"""A second split, written after the rules were tuned on the first: its figures are printed (no
target) to say how far the rules generalise to phrasings they were not tuned on."""
TRANSCRIPTS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "transcripts"
SPLICE_EVERY = 4
SEED = 0x24C0DE
FRAGMENT = 12
TARGET_RECALL = 0.995
TARGET_KEPT = 0.99
TARGET_SPEEDUP = 2.0

Redact = Callable[[str], str]

ALPHABETS = {
    "hex": "0123456789abcdef",
    "HEX": "0123456789ABCDEF",
    "alnum": string.ascii_letters + string.digits,
    "lower": string.ascii_lowercase,
    "upper": string.ascii_uppercase + "234567",
    "upalnum": string.ascii_uppercase + string.digits,
    "digits": string.digits,
    "b64": string.ascii_letters + string.digits + "+/",
    "urlsafe": string.ascii_letters + string.digits + "-_",
    "base32": string.ascii_lowercase + "234567",
}
_SLOT = re.compile(r"\{(!?)([A-Za-z0-9]+)(?::([\w-]+))?\}")
_TERMINAL = re.compile(
    "\x1b\\[[0-?]*[ -/]*[@-~]|[\u200b-\u200f\u2060-\u2064\ufeff]|\\\\+u(?:001b\\[[0-?]*[@-~]|200b)"
)
_SEP_BEFORE = " \n\"'=:(/"


@dataclass(frozen=True)
class Case:
    kind: str  # "secret" | "lookalike"
    cls: str
    wrapping: str
    text: str
    forms: tuple[str, ...] = ()  # the secret as it may appear (raw, escaped once, twice)
    secret: str = ""


class Draw:
    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)
        self._words: list[str] | None = None

    def chars(self, n: int, alphabet: str) -> str:
        return "".join(self.r.choice(alphabet) for _ in range(n))

    def password(self) -> str:
        return (
            self.chars(1, string.ascii_uppercase)
            + self.chars(6, string.ascii_letters + string.digits)
            + self.chars(1, "!#%&*@^~+=")
            + self.chars(5, string.ascii_letters + string.digits + "!#%&*@^~+=-_")
        )

    def weak(self) -> str:
        word = self.r.choice(
            ["winter", "dragon", "monkey", "shadow", "sunshine", "letmein", "hello", "admin"]
        )
        return (
            word + self.chars(self.r.randint(1, 4), string.digits) + self.chars(self.r.randint(0, 1), "!@#")
        )

    def uuid(self) -> str:
        h = ALPHABETS["hex"]
        return "-".join(self.chars(n, h) for n in (8, 4, 4, 4, 12))

    def seed_phrase(self, n: int) -> str:
        if self._words is None:
            from pipeline.redaction.seed import wordlist

            self._words = sorted(wordlist())
        return " ".join(self.r.choice(self._words) for _ in range(n))

    def shape(self, name: str) -> str:
        """A secret of a known shape, for base64 of it."""
        return {
            "pw": self.password,
            "ghp": lambda: "ghp_" + self.chars(36, ALPHABETS["alnum"]),
            "sk-ant": lambda: "sk-ant-api03-" + self.chars(93, ALPHABETS["urlsafe"]) + "AA",
            "akia-line": lambda: "aws_secret_access_key=" + self.chars(40, ALPHABETS["b64"]),
            "glpat": lambda: "glpat-" + self.chars(20, ALPHABETS["urlsafe"]),
        }[name]()

    def slot(self, kind: str, arg: str | None) -> str | None:
        if kind in ALPHABETS:
            return self.chars(int(arg or 16), ALPHABETS[kind])
        if kind == "pw":
            return self.password()
        if kind == "word":
            return self.weak()
        if kind == "uuid":
            return self.uuid()
        if kind == "seed":
            return self.seed_phrase(int(arg or 12))
        if kind == "b64of":
            return base64.b64encode(self.shape(arg or "pw").encode()).decode()
        return None  # not a slot: text in braces (``{token}``, ``{{token}}``)


def load(draw: Draw, corpus: Path = CORPUS) -> Iterator[tuple[str, str, str, str]]:
    """(kind, class, text, secret) per corpus line, its slots filled."""
    for raw in corpus.read_text(encoding="utf-8").splitlines():
        if not raw.strip() or raw.startswith("#"):
            continue
        kind, cls, template = raw.split("\t", 2)
        template = template.replace("\\n", "\n")
        secret = ""

        def fill(m: re.Match[str]) -> str:
            nonlocal secret
            value = draw.slot(m.group(2), m.group(3))
            if value is None:
                return m.group(0)
            if m.group(1):
                secret = value
            return value

        text = _SLOT.sub(fill, template)
        yield kind, cls, text, secret


def colour(text: str, secret: str, draw: Draw) -> str:
    """``grep --color=always`` on the word before the secret, ``jq -C`` on the value, and a
    zero-width space inside it."""
    at = text.index(secret)
    head = text[:at]
    end = len(head.rstrip(" :='\"/>"))
    start = max(head.rfind(c, 0, end) for c in _SEP_BEFORE) + 1
    cut = draw.r.randint(1, max(1, len(secret) - 1))
    value = f"\x1b[0;32m{secret[:cut]}\u200b{secret[cut:]}\x1b[0m"
    tail = text[at + len(secret) :]
    return f"{head[:start]}\x1b[01;31m\x1b[K{head[start:end]}\x1b[m\x1b[K{head[end:]}{value}{tail}"


def build(draw: Draw, corpus: Path = CORPUS) -> list[Case]:
    cases: list[Case] = []
    for kind, cls, text, secret in load(draw, corpus):
        if kind == "lookalike":
            cases.append(Case(kind, cls, "bare", text))
            cases.append(Case(kind, cls, "json-once", json.dumps({"type": "tool_result", "content": text})))
            cases.append(
                Case(kind, cls, "tool-result", "\n".join("  │ " + line for line in text.split("\n")))
            )
            continue
        once = json.dumps(secret)[1:-1]
        twice = json.dumps(once)[1:-1]
        coloured = colour(text, secret, draw)
        wrapped = [
            ("bare", text, (secret,)),
            ("shell", f"$ history | tail -3\n  501  {text}\n  502  ls", (secret,)),
            ("json-once", json.dumps({"type": "tool_result", "content": text}), (secret, once)),
            ("json-twice", json.dumps({"payload": json.dumps({"output": text})}), (secret, once, twice)),
            ("tool-result", "\n".join("  │ " + line for line in text.split("\n")), (secret,)),
            ("ansi", coloured, (secret,)),
            ("ansi-json", json.dumps({"content": coloured}), (secret, once)),
        ]
        cases.extend(Case(kind, cls, w, t, forms, secret) for w, t, forms in wrapped)
    return cases


def caught(case: Case, output: str) -> bool:
    output = _TERMINAL.sub("", output)
    if any(form in output for form in case.forms):
        return False
    s = case.secret
    return not any(s[i : i + FRAGMENT] in output for i in range(len(s) - FRAGMENT + 1))


def score(name: str, redact: Redact, cases: list[Case], show: int) -> dict[str, object]:
    hit = kept = 0
    misses: Counter[str] = Counter()
    altered: Counter[str] = Counter()
    shown = 0
    secrets = [c for c in cases if c.kind == "secret"]
    looks = [c for c in cases if c.kind == "lookalike"]
    for case in secrets:
        if caught(case, redact(case.text)):
            hit += 1
        else:
            misses[f"{case.cls}/{case.wrapping}"] += 1
            if shown < show:
                shown += 1
                print(f"  MISS [{name}] {case.cls}/{case.wrapping}: {case.text[:200]!r}")
    for case in looks:
        out = redact(case.text)
        if out == case.text:
            kept += 1
        else:
            altered[case.cls] += 1
            if shown < show:
                shown += 1
                print(f"  ALTERED [{name}] {case.cls}/{case.wrapping}: {out[:200]!r}")
    return {
        "name": name,
        "hit": hit,
        "secrets": len(secrets),
        "recall": hit / len(secrets),
        "kept": kept,
        "looks": len(looks),
        "kept_rate": kept / len(looks),
        "misses": misses,
        "altered": altered,
    }


def transcript_text(cases: list[Case], repeat: int) -> str:
    """The fixture transcripts (not the hostile ones), ``repeat`` times, with each case text spliced in
    once, after every ``SPLICE_EVERY``-th line."""
    files = sorted(
        p for p in TRANSCRIPTS.rglob("*") if p.suffix in (".jsonl", ".json") and "hostile" not in p.parts
    )
    lines = [line for p in files for line in p.read_text(encoding="utf-8", errors="replace").splitlines()]
    texts = iter([c.text for c in cases])
    out: list[str] = []
    for i, line in enumerate(lines * repeat):
        out.append(line)
        if i % SPLICE_EVERY == 0 and (text := next(texts, None)) is not None:
            out.append(text)
    out.extend(texts)
    return "\n".join(out)


def throughput(redactors: dict[str, Redact], blob: str, rounds: int) -> dict[str, float]:
    """MB/s per redactor on this process's CPU time, best of ``rounds`` interleaved runs."""
    size = len(blob.encode()) / 1e6
    best = dict.fromkeys(redactors, float("inf"))
    for _ in range(rounds):
        for name, redact in redactors.items():
            t0 = time.process_time()
            redact(blob)
            best[name] = min(best[name], time.process_time() - t0)
    return {name: size / max(best[name], 1e-9) for name in redactors}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--show", type=int, default=0, help="print up to N misses / altered look-alikes each")
    parser.add_argument("--repeat", type=int, default=4, help="copies of the texts timed")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds (the best counts)")
    parser.add_argument(
        "--sample", type=int, default=0, help="keep about N cases, evenly spread (a quick run)"
    )
    args = parser.parse_args(argv)

    from pipeline.redaction import Redactor

    cases = build(Draw(SEED))
    if args.sample:
        cases = cases[:: max(1, len(cases) // args.sample)]
    secrets = [c for c in cases if c.kind == "secret"]
    classes = sorted({c.cls for c in secrets})
    print(
        f"corpus: {len(secrets)} secrets ({len(secrets and {c.secret for c in secrets})} distinct, "
        f"{len(classes)} classes, {len({c.wrapping for c in secrets})} wrappings) + "
        f"{len(cases) - len(secrets)} look-alikes"
    )
    memd = Redactor(b"benchmark-key-0123456789abcdef")
    redactors: dict[str, Redact] = {"memd": lambda t: memd.redact(t).text, "codex-4-regex": codex_redact}
    results = [score(name, redact, cases, args.show) for name, redact in redactors.items()]
    mixed = transcript_text(cases, args.repeat)
    dense = "\n".join(c.text for c in cases) * args.repeat
    speed = throughput(redactors, mixed, args.rounds)
    dense_speed = throughput(redactors, dense, args.rounds)
    print(
        f"\nthroughput, best of {args.rounds}: transcript text {len(mixed.encode()) / 1e6:.2f} MB "
        f"(fixture transcripts x{args.repeat}, corpus spliced in); corpus alone {len(dense.encode()) / 1e6:.2f} MB"
    )
    print(
        f"{'redactor':<14} {'recall':>16} {'look-alikes kept':>18} {'MB/s transcript':>16} {'MB/s corpus':>12}"
    )
    for r in results:
        name = str(r["name"])
        print(
            f"{name:<14} {r['hit']:>5}/{r['secrets']:<4} {r['recall']:.4f} "
            f"{r['kept']:>5}/{r['looks']:<4} {r['kept_rate']:.4f}   {speed[name]:>14.2f} {dense_speed[name]:>12.2f}"
        )
    fresh = build(Draw(SEED), FRESH)
    fresh_results = [score(name, redact, fresh, 0) for name, redact in redactors.items()]
    print(f"\nsecond split, written after the rules were tuned on the first ({FRESH.name}): no target")
    for r in fresh_results:
        print(
            f"{r['name']:<14} {r['hit']:>5}/{r['secrets']:<4} {r['recall']:.4f} "
            f"{r['kept']:>5}/{r['looks']:<4} {r['kept_rate']:.4f}"
        )
    if fresh_results[0]["misses"]:
        print(
            "memd misses there: " + ", ".join(f"{k} {v}" for k, v in fresh_results[0]["misses"].most_common())
        )  # type: ignore[attr-defined]
    m, base = results[0], results[1]
    for label, counter in (("memd misses", m["misses"]), ("memd altered look-alikes", m["altered"])):
        if counter:
            print(f"{label}: " + ", ".join(f"{k} {v}" for k, v in counter.most_common()))  # type: ignore[attr-defined]
    by_class: Counter[str] = Counter(c.cls for c in secrets)
    missed: Counter[str] = Counter()
    for key, n in m["misses"].items():  # type: ignore[attr-defined]
        missed[key.split("/")[0]] += n
    print(
        "memd recall by class: " + ", ".join(f"{k} {by_class[k] - missed[k]}/{by_class[k]}" for k in classes)
    )
    speedup = speed["memd"] / speed["codex-4-regex"]
    print(
        f"memd / baseline: {speedup:.2f}x on transcript text, {dense_speed['memd'] / dense_speed['codex-4-regex']:.2f}x on the corpus alone"
    )
    checks = [
        (
            f"recall >= {TARGET_RECALL} ({m['recall']:.4f}; baseline {base['recall']:.4f})",
            m["recall"] >= TARGET_RECALL,
        ),  # type: ignore[operator]
        (f"look-alikes kept >= {TARGET_KEPT} ({m['kept_rate']:.4f})", m["kept_rate"] >= TARGET_KEPT),  # type: ignore[operator]
        (
            f"at least {TARGET_SPEEDUP:g}x the four-regex baseline on transcript text ({speedup:.2f}x)",
            speedup >= TARGET_SPEEDUP,
        ),
    ]
    print()
    for label, ok in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {label}")
    return 0 if all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())

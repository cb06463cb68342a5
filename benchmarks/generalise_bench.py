"""Redaction that generalises: recall and look-alikes kept on a corpus split leave-class-out.

    .venv/bin/python benchmarks/generalise_bench.py [--per-class 12] [--tiny] [--show N] [--heldout]
        [--no-detect-secrets] [--secretlint PATH | --no-secretlint] [--rounds 5] [--repeat 3]

The corpus is generated (benchmarks/redaction_gen/, fixed seeds): fake secrets and look-alikes by
class, each embedded in transcript-like text with its exact span. Classes, not cases, are split, in
five: the development half (redaction_gen/dev.py); "dev-2" (redaction_gen/eval.py), the first
evaluation half, whose figures have been read; "dev-3" (redaction_gen/heldout.py), the first
held-out half, measured once and so looked at too (both are development material now, with their
own seeds and framing unchanged); and "dev-4" (redaction_gen/heldout2.py), the second held-out
half, new classes whose shapes none of the others hold, with its own seed and its own transcript
framing, written without reading memd's rules, measured once with ``--heldout`` (2026-12-07) and so
looked at too; and "dev-5" (redaction_gen/heldout3.py), the third held-out half, new classes whose
shapes none of the four others hold, with its own seed and framing, written without reading memd's
rules and never run through memd's redactor while it was written, measured once with ``--heldout``
(2026-12-08) and so looked at too. No split is held out now: a new one has to be written, by someone
who does not read the rules, before the targets can be judged again. Every split covers every family of issue 33, so each
family has a figure on each. Every case is scored as plain text and as a JSONL transcript line (the
text JSON-escaped inside a tool result, as the agents write it).

The held-out half is measured only with ``--heldout``: it is run once, when the rules are done, and
its figures are the ones the targets are judged on. Without the flag (CI's ``--tiny`` included),
memd never sees it, and the targets are not judged; dev, dev-2 and dev-3 are measured on every run.

In the same run: memd's redactor (the engine the runtime builds, with a fixed key), detect-secrets
(its default plugins and filters), Codex's four regexes, and secretlint with its recommended preset
when it is installed (``npm install --prefix ~/.cache/memd-bench/secretlint secretlint
@secretlint/secretlint-rule-preset-recommend``; it runs offline once installed; one process scans
every case file of a half, and each reported range is replaced).

Counting. A secret is caught only if none of its characters that make it secret survive: no
8-character window of any piece of it (a split value has several pieces; pieces shorter than that
count only when the whole secret is short, then the whole piece) is in the output more often than
in the case's text outside the secret, once redaction placeholders (``[REDACTED...]``) are taken
out. So partial redaction that leaves a tail of 8 characters or more is a miss. A look-alike is kept
if its text survives unchanged (each marked piece at least as often as in the input).

Speed: memd and the four regexes on transcript text (the real long sessions of
benchmarks/data/long_sessions, 4 MB: the target), and beside it, not judged, on two denser texts:
tests/fixtures/transcripts with a case spliced in after every fourth line, and the cases alone (every
case of every split, no transcript). Until 2026-12-07 the target was judged on the fixtures with every
case of every split spliced in, so each new split made that text denser (a third of it cases with four
splits); the figure no longer said anything about transcripts. In process, on this process's CPU time, interleaved, the best
of ``--rounds`` counting; characters per second.

Targets (exit status 1 if one is missed), on the held-out half, for memd: recall >= 0.95 overall
and >= 0.85 in every class, look-alikes kept >= 0.97; and at least twice the four regexes' speed on
transcript text. Misses are printed (``--show``) for the development splits only: the held-out half
prints figures, never its cases.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.redaction_bench import codex_redact, detect_secrets_redactor
from benchmarks.redaction_gen import Case, Framer, Spec, build
from benchmarks.redaction_gen import dev as dev_half
from benchmarks.redaction_gen import eval as eval_half
from benchmarks.redaction_gen import heldout as dev3_half
from benchmarks.redaction_gen import heldout2 as dev4_half
from benchmarks.redaction_gen import heldout3 as heldout_half

TRANSCRIPTS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "transcripts"
LONG_SESSIONS = Path(__file__).resolve().parent / "data" / "long_sessions"
SECRETLINT = Path.home() / ".cache" / "memd-bench" / "secretlint" / "node_modules" / ".bin" / "secretlint"
SECRETLINT_TIMEOUT = 600.0
FRAGMENT = 8
SPLICE_EVERY = 4
TARGET_RECALL = 0.95
TARGET_CLASS_RECALL = 0.85
TARGET_KEPT = 0.97
TARGET_SPEEDUP = 2.0
_PLACEHOLDER = re.compile(r"\[REDACTED[^\]\n]{0,80}\]")

Redact = Callable[[str], str]
BatchRedact = Callable[[list[str]], list[str]]


# -- wrappings --


def as_jsonl(case: Case) -> Case:
    """The case as a JSONL transcript line: its text JSON-escaped in a tool result, spans moved."""
    head = '{"type":"tool_result","tool_use_id":"toolu_01","content":"'
    out = [head]
    spans: list[tuple[int, int]] = []
    pos = len(head)
    last = 0

    def esc(s: str) -> str:
        return json.dumps(s, ensure_ascii=False)[1:-1]

    for a, b in case.spans:
        gap, piece = esc(case.text[last:a]), esc(case.text[a:b])
        out += [gap, piece]
        spans.append((pos + len(gap), pos + len(gap) + len(piece)))
        pos += len(gap) + len(piece)
        last = b
    out += [esc(case.text[last:]), '","is_error":false}']
    return replace(case, text="".join(out), spans=tuple(spans))


@dataclass(frozen=True)
class Split:
    half: str  # the name its seeds are drawn under
    title: str
    specs: Callable[[], list[Spec]]
    seed: int | None = None
    framer: Framer | None = None
    held_out: bool = False


SPLITS = [
    Split("dev", "development", dev_half.specs),
    Split("eval", "dev-2 (looked at, now development)", eval_half.specs),
    Split("heldout", "dev-3 (looked at, now development)", dev3_half.specs, dev3_half.SEED, dev3_half.frame),
    # measured once with --heldout on 2026-12-07 (docs/redaction-measured.md), so looked at
    Split(
        dev4_half.HALF,
        "dev-4 (looked at, now development)",
        dev4_half.specs,
        dev4_half.SEED,
        dev4_half.frame,
    ),
    # written 2026-12-07 without reading memd's rules or running its redactor on it; measured once with
    # --heldout on 2026-12-08 (docs/redaction-measured.md), so looked at: no split is held out until a
    # new one is written, by someone who does not read the rules
    Split(
        heldout_half.HALF,
        "dev-5 (looked at, now development)",
        heldout_half.specs,
        heldout_half.SEED,
        heldout_half.frame,
    ),
]


def split_cases(split: Split, per_class: int) -> list[Case]:
    if split.seed is None:
        return build(split.half, split.specs(), per_class, framer=split.framer)
    return build(split.half, split.specs(), per_class, seed=split.seed, framer=split.framer)


def corpus(split: Split, per_class: int) -> list[tuple[str, Case]]:
    cases = split_cases(split, per_class)
    return [("text", c) for c in cases] + [("jsonl", as_jsonl(c)) for c in cases]


# -- scoring --


def _outside(case: Case) -> str:
    parts, last = [], 0
    for a, b in case.spans:
        parts.append(case.text[last:a])
        last = b
    parts.append(case.text[last:])
    return "\0".join(parts)


def caught(case: Case, output: str) -> bool:
    output = _PLACEHOLDER.sub("\0", output)
    rest = _outside(case)
    pieces = case.pieces
    longs = [p for p in pieces if len(p) >= FRAGMENT] or [max(pieces, key=len)]
    for piece in longs:
        n = min(FRAGMENT, len(piece))
        for i in range(len(piece) - n + 1):
            window = piece[i : i + n]
            if output.count(window) > rest.count(window):
                return False
    return True


def kept(case: Case, output: str) -> bool:
    return all(output.count(p) >= case.text.count(p) for p in case.pieces)


@dataclass
class Tally:
    good: int = 0
    total: int = 0

    @property
    def rate(self) -> float:
        return self.good / self.total if self.total else 1.0

    def __str__(self) -> str:
        return f"{self.good}/{self.total}"


@dataclass
class Scores:
    secrets: Tally
    looks: Tally
    by_class: dict[str, Tally]
    misses: list[tuple[str, str, str]]  # (class, wrapping, text) of a development split


def score(cases: list[tuple[str, Case]], outputs: Sequence[str], keep_misses: bool) -> Scores:
    s = Scores(Tally(), Tally(), defaultdict(Tally), [])
    for (wrapping, case), out in zip(cases, outputs, strict=True):
        ok = caught(case, out) if case.kind == "secret" else kept(case, out)
        overall = s.secrets if case.kind == "secret" else s.looks
        for t in (overall, s.by_class[case.cls]):
            t.total += 1
            t.good += ok
        if not ok and keep_misses:
            s.misses.append((case.cls, wrapping, out))
    return s


# -- the redactors --


def memd_redactor() -> Redact:
    from pipeline.redaction import Redactor

    engine = Redactor(b"generalise-bench-key-0123456789ab")
    return lambda text: engine.redact(text).text


def _utf16_to_index(text: str) -> Callable[[int], int]:
    """secretlint's ranges count UTF-16 code units; Python indexes code points."""
    if all(ord(c) < 0x10000 for c in text):
        return lambda i: i
    table: list[int] = []
    for idx, c in enumerate(text):
        table += [idx] * (2 if ord(c) >= 0x10000 else 1)
    table.append(len(text))
    return lambda i: table[min(i, len(table) - 1)]


def secretlint_batch(binary: Path) -> BatchRedact:
    """All texts of a half as files in one folder, scanned by one secretlint process; every
    reported range replaced by ``[REDACTED]``."""

    def redact(texts: list[str]) -> list[str]:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            (root / ".secretlintrc.json").write_text(
                json.dumps({"rules": [{"id": "@secretlint/secretlint-rule-preset-recommend"}]})
            )
            for i, text in enumerate(texts):
                (root / f"case{i:05d}.txt").write_text(text, encoding="utf-8")
            done = subprocess.run(
                [
                    str(binary),
                    "--format",
                    "json",
                    "--output",
                    "found.json",
                    "--secretlintrc",
                    ".secretlintrc.json",
                ]
                + ["case*.txt"],
                cwd=root,
                capture_output=True,
                text=True,
                timeout=SECRETLINT_TIMEOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "NODE_PATH": str(binary.parents[1])},
            )
            if done.returncode not in (0, 1):
                raise RuntimeError(f"secretlint exited {done.returncode}: {done.stderr[-500:]}")
            found: dict[int, list[tuple[int, int]]] = defaultdict(list)
            report = root / "found.json"  # not stdout: node cuts a large piped stdout at exit
            for result in json.loads(report.read_text(encoding="utf-8") if report.exists() else "[]"):
                i = int(Path(result["filePath"]).stem.removeprefix("case"))
                at = _utf16_to_index(texts[i])
                for m in result.get("messages", []):
                    a, b = m["range"]
                    found[i].append((at(a), at(b)))
        out = []
        for i, text in enumerate(texts):
            for a, b in sorted(found.get(i, []), reverse=True):
                text = text[:a] + "[REDACTED]" + text[b:]
            out.append(text)
        return out

    return redact


# -- speed --


def real_transcripts() -> str:
    """The real long sessions shipped for the cost benchmark (benchmarks/data/long_sessions/SOURCES.md),
    decompressed and joined: transcript text as agents write it."""
    files = sorted(LONG_SESSIONS.rglob("*.gz"))
    return "\n".join(gzip.decompress(p.read_bytes()).decode("utf-8", errors="replace") for p in files)


def transcript_text(cases: list[Case], repeat: int) -> str:
    files = sorted(
        p for p in TRANSCRIPTS.rglob("*") if p.suffix in (".jsonl", ".json") and "hostile" not in p.parts
    )
    lines = [line for p in files for line in p.read_text(encoding="utf-8", errors="replace").splitlines()]
    texts = itertools.cycle([c.text for c in cases])
    out: list[str] = []
    for i, line in enumerate(lines * repeat):
        out.append(line)
        if i % SPLICE_EVERY == 0:
            out.append(next(texts))
    return "\n".join(out)


def throughput(redactors: dict[str, Redact], blob: str, rounds: int) -> dict[str, float]:
    best = dict.fromkeys(redactors, float("inf"))
    for _ in range(rounds):
        for name, redact in redactors.items():
            t0 = time.process_time()
            redact(blob)
            best[name] = min(best[name], time.process_time() - t0)
    return {name: len(blob) / max(best[name], 1e-9) for name in redactors}


# -- report --


def report(half: str, results: dict[str, Scores], classes: list[str], kinds: dict[str, str]) -> None:
    names = list(results)
    width = max(len(c) for c in classes) + 2
    print(f"\n== {half} ==")
    print(f"{'class':<{width}}{'':>4}" + "".join(f"{n:>18}" for n in names))
    for cls in classes:
        row = f"{cls:<{width}}{'kept' if kinds[cls] == 'lookalike' else '':>4}"
        for n in names:
            t = results[n].by_class[cls]
            row += f"{str(t) + f' {t.rate:.2f}':>18}"
        print(row)
    families: dict[str, list[str]] = defaultdict(list)
    for cls in classes:
        families[cls.split("/")[0]].append(cls)
    print(f"{'by family':<{width}}")
    for fam, members in families.items():
        row = f"  {fam:<{width - 2}}{'kept' if kinds[members[0]] == 'lookalike' else '':>4}"
        for n in names:
            good = sum(results[n].by_class[c].good for c in members)
            total = sum(results[n].by_class[c].total for c in members)
            row += f"{f'{good}/{total} {good / total:.2f}':>18}"
        print(row)
    for label, attr in (("RECALL (secrets)", "secrets"), ("LOOK-ALIKES KEPT", "looks")):
        row = f"{label:<{width}}{'':>4}"
        for n in names:
            t = getattr(results[n], attr)
            row += f"{str(t) + f' {t.rate:.3f}':>18}"
        print(row)


def scanners(args: argparse.Namespace, memd: Redact) -> tuple[dict[str, Redact], dict[str, BatchRedact]]:
    """memd, detect-secrets and Codex's four regexes (one text at a time), and secretlint (a whole
    split at once) when it is installed."""
    single: dict[str, Redact] = {"memd": memd}
    if not args.no_detect_secrets:
        ds = detect_secrets_redactor()
        if ds is None:
            print("detect-secrets: not installed (pip install -e '.[dev]'); left out")
        else:
            single["detect-secrets"] = ds
    single["codex-4-regex"] = codex_redact
    batch: dict[str, BatchRedact] = {}
    if not args.no_secretlint:
        binary = args.secretlint if args.secretlint.exists() else None
        if binary is None and (found := shutil.which("secretlint")):
            binary = Path(found)
        if binary is None or shutil.which("node") is None:
            print(
                f"secretlint: not found at {args.secretlint} (npm install --prefix "
                f"{SECRETLINT.parents[2]} secretlint @secretlint/secretlint-rule-preset-recommend); left out"
            )
        else:
            batch["secretlint"] = secretlint_batch(binary)
    return single, batch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--per-class", type=int, default=12, help="cases per class in each half")
    parser.add_argument("--tiny", action="store_true", help="1 case per class, 1 timing round (CI)")
    parser.add_argument(
        "--show", type=int, default=0, help="print up to N of memd's misses on each development split"
    )
    parser.add_argument(
        "--heldout",
        action="store_true",
        help="also measure the held-out half (once, when the rules are done; judges the targets)",
    )
    parser.add_argument("--no-detect-secrets", action="store_true")
    parser.add_argument("--secretlint", type=Path, default=SECRETLINT, help="the secretlint executable")
    parser.add_argument("--no-secretlint", action="store_true")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds (the best counts)")
    parser.add_argument("--repeat", type=int, default=3, help="copies of the fixture transcripts timed")
    args = parser.parse_args(argv)
    per_class = 1 if args.tiny else args.per_class
    rounds, repeat = (1, 1) if args.tiny else (args.rounds, args.repeat)

    memd = memd_redactor()
    single, batch = scanners(args, memd)

    verdicts: list[tuple[str, bool]] = []
    all_cases: list[Case] = []
    for split in SPLITS:
        if split.held_out and not args.heldout:
            print(
                f"\n{split.title}: not measured (run with --heldout once the rules are done); "
                "the targets are judged on it only"
            )
            continue
        cases = corpus(split, per_class)
        all_cases += [c for w, c in cases if w == "text"]
        texts = [c.text for _, c in cases]
        results: dict[str, Scores] = {}
        for name, redact in single.items():
            results[name] = score(cases, [redact(t) for t in texts], name == "memd" and not split.held_out)
        for name, many in batch.items():
            try:
                results[name] = score(cases, many(texts), False)
            except (RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
                print(f"secretlint failed on {split.title}: {e}")
        classes = sorted({c.cls for _, c in cases}, key=lambda c: (c.startswith("lookalike"), c))
        kinds = {c.cls: c.kind for _, c in cases}
        n_secret = sum(1 for w, c in cases if c.kind == "secret" and w == "text")
        n_look = sum(1 for w, c in cases if c.kind == "lookalike" and w == "text")
        print(
            f"\n{split.title}: {len(classes)} classes, {n_secret} secrets and {n_look} look-alikes, "
            f"each as text and as a JSONL line"
        )
        report(split.title, results, classes, kinds)
        if not split.held_out:
            for cls, wrapping, out in results["memd"].misses[: args.show]:
                print(f"  MISS/ALTERED [memd] {cls} ({wrapping}): {out[:240]!r}")
        else:
            m = results["memd"]
            secret_classes = [c for c in classes if kinds[c] == "secret"]
            worst = min(secret_classes, key=lambda c: m.by_class[c].rate)
            below = [c for c in secret_classes if m.by_class[c].rate < TARGET_CLASS_RECALL]
            verdicts += [
                (
                    f"held-out recall >= {TARGET_RECALL} ({m.secrets.rate:.3f})",
                    m.secrets.rate >= TARGET_RECALL,
                ),
                (
                    f"held-out recall >= {TARGET_CLASS_RECALL} in every class (worst {worst} "
                    f"{m.by_class[worst].rate:.2f}; {len(below)}/{len(secret_classes)} classes below)",
                    not below,
                ),
                (
                    f"held-out look-alikes kept >= {TARGET_KEPT} ({m.looks.rate:.3f})",
                    m.looks.rate >= TARGET_KEPT,
                ),
            ]

    real = real_transcripts()
    speed = throughput({"memd": memd, "codex-4-regex": codex_redact}, real, rounds)
    ratio = speed["memd"] / speed["codex-4-regex"]
    print(
        f"\nspeed on transcript text ({len(real):,} chars: the real long sessions of benchmarks/data/long_sessions), "
        f"CPU time, best of {rounds}:"
    )
    for name, cps in speed.items():
        print(f"  {name:<14} {cps / 1e6:8.2f} M chars/s")
    denser = {
        f"fixture transcripts x{repeat} with a case after every {SPLICE_EVERY}th line": transcript_text(
            all_cases, repeat
        ),
        "the cases alone, no transcript": "\n".join(c.text for c in all_cases),
    }
    for title, text in denser.items():
        figures = throughput({"memd": memd, "codex-4-regex": codex_redact}, text, rounds)
        print(
            f"speed on {title} ({len(text):,} chars; denser than any transcript: shown beside the target, "
            f"not judged): memd {figures['memd'] / 1e6:.2f} M chars/s, the four regexes "
            f"{figures['codex-4-regex'] / 1e6:.2f} M ({figures['memd'] / figures['codex-4-regex']:.2f}x)"
        )
    verdicts.append(
        (
            f"memd at least {TARGET_SPEEDUP:g}x the four regexes on transcript text ({ratio:.2f}x)",
            ratio >= TARGET_SPEEDUP,
        )
    )
    print()
    for label, ok in verdicts:
        print(f"{'MET   ' if ok else 'MISSED'}  {label}")
    if not any(split.held_out for split in SPLITS):
        print(
            "NOT JUDGED  recall, per-class recall, look-alikes kept: no split is held out now (every one "
            "has been looked at); write a new one in benchmarks/redaction_gen/ before tuning rules"
        )
    elif not args.heldout:
        print("NOT JUDGED  recall, per-class recall, look-alikes kept: the held-out half was not measured")
    return 0 if all(ok for _, ok in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())

"""The generated redaction corpus (benchmarks/redaction_gen) and generalise_bench's counting.

The corpus is split leave-class-out: a class belongs to one half, both halves cover every family,
cases are the same for the same seed, every span is where the value is, and checksummed formats
carry valid checksums. The counting treats partial redaction that leaves a tail as a miss.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from benchmarks.generalise_bench import as_jsonl, caught, kept
from benchmarks.redaction_gen import B58, BECH32, Case, base58check, bech32, build, mark
from benchmarks.redaction_gen import dev as dev_half
from benchmarks.redaction_gen import eval as eval_half

FAMILIES = {
    "slot",
    "cookie",
    "token-near-word",
    "prefix-token",
    "cloud-key",
    "private-key",
    "split",
    "prose",
    "mail",
    "lookalike-hash",
    "lookalike-id",
    "lookalike-public",
    "lookalike-example",
    "lookalike-reference",
    "lookalike-data",
    "lookalike-prose",
}


def test_the_halves_share_no_class_name_or_language_and_both_cover_every_family() -> None:
    dev, ev = dev_half.specs(), eval_half.specs()
    assert not {(s.family, s.name) for s in dev} & {(s.family, s.name) for s in ev}
    assert {s.family for s in dev} == FAMILIES == {s.family for s in ev}
    assert not set(dev_half.PROSE) & set(eval_half.PROSE)
    assert not {tuple(n) for n in dev_half.NAMES} & {tuple(n) for n in eval_half.NAMES}
    languages = {lang for lang in (*dev_half.PROSE, *eval_half.PROSE) if not lang.startswith("en")}
    assert len(languages) >= 25


def test_the_corpus_is_deterministic_and_every_span_is_the_marked_value() -> None:
    for half, specs in (("dev", dev_half.specs()), ("eval", eval_half.specs())):
        first, again = build(half, specs, 3), build(half, specs, 3)
        assert first == again
        for case in first:
            assert "\x01" not in case.text
            assert "\x02" not in case.text
            assert all(0 <= a < b <= len(case.text) for a, b in case.spans)
            assert case.kind in ("secret", "lookalike")
        assert build(half, specs, 3, seed=1) != first


def test_a_case_escaped_into_a_jsonl_line_keeps_its_spans() -> None:
    for case in build("dev", dev_half.specs(), 2) + build("eval", eval_half.specs(), 2):
        line = as_jsonl(case)
        assert json.loads(line.text)["content"] == case.text
        assert [json.loads(f'"{p}"') for p in line.pieces] == case.pieces


def test_checksummed_formats_are_valid() -> None:
    payload = b"\x80" + bytes(range(32)) + b"\x01"
    wif = base58check(payload)
    n = 0
    for ch in wif:
        n = n * 58 + B58.index(ch)
    raw = n.to_bytes(38, "big")
    assert raw[:-4] == payload
    assert raw[-4:] == hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4]
    # BIP-173's reference: the witness program of this key hash is bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4
    program = bytes.fromhex("751e76e8199196d454941c45d1b3a323f1433bd6")
    assert bech32("bc", program, witness_version=0) == "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4"
    nsec = bech32("nsec", bytes(32))
    assert nsec.startswith("nsec1")
    assert set(nsec[5:]) <= set(BECH32)


def _case(text: str) -> Case:
    from benchmarks.redaction_gen import _strip_marks

    plain, spans = _strip_marks(text)
    return Case("dev", "t", "t/t", "secret", plain, spans)


def test_partial_redaction_leaving_a_tail_is_a_miss() -> None:
    secret = "Zq81mPx0aVbT44kLw9eR"
    case = _case(f"token = {mark(secret)}\n")
    assert caught(case, "token = [REDACTED:secret-assignment:ab12]\n")
    assert not caught(case, f"token = {secret}\n")
    assert not caught(case, "token = [REDACTED:x:1]" + secret[10:] + "\n")  # a 10-character tail
    assert caught(case, "token = [REDACTED:x:1]" + secret[-5:] + "\n")  # shorter than a window


def test_a_split_secret_is_caught_only_when_every_piece_is_gone() -> None:
    case = _case(f'key = "{mark("a8Kq2mZ0xLp4Rt7v")}" +\n  "{mark("Wn3bYc6dHe1fGi9j")}"')
    assert caught(case, 'key = "[REDACTED:a:1]" +\n  "[REDACTED:a:2]"')
    assert not caught(case, 'key = "[REDACTED:a:1]" +\n  "Wn3bYc6dHe1fGi9j"')


def test_a_short_pin_counts_against_its_own_occurrences_only() -> None:
    case = _case(f"room 4821, PIN ist {mark('4821')}")
    assert caught(case, "room 4821, PIN ist [REDACTED:pin:1]")
    assert not caught(case, "room 4821, PIN ist 4821")


def test_a_look_alike_is_kept_only_unchanged() -> None:
    digest = "sha256:" + "ab" * 32
    case = Case("dev", "l", "l/l", "lookalike", f"Digest: {digest}", ((8, 8 + len(digest)),))
    assert kept(case, case.text)
    assert not kept(case, "Digest: sha256:[REDACTED:hex:1]")


def test_the_development_half_never_imports_the_evaluation_half() -> None:
    source = Path(dev_half.__file__ or "").read_text(encoding="utf-8")
    assert not re.search(r"^\s*(from|import)\b.*\beval\b", source, re.MULTILINE)

"""The generated redaction corpus (benchmarks/redaction_gen) and generalise_bench's counting.

The corpus is split leave-class-out: a class belongs to one split (dev, dev-2 = the looked-at first
evaluation half, dev-3, dev-4 and dev-5 = the looked-at first, second and third held-out halves),
every split covers every family, cases are the same for the same seed, every span is where the
value is, and checksummed formats carry valid checksums. The counting treats partial redaction that
leaves a tail as a miss. Nothing here runs a redactor on the held-out half: its generator's own
invariants only.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

from benchmarks.generalise_bench import SPLITS, as_jsonl, caught, kept, split_cases
from benchmarks.redaction_gen import (
    B58,
    BECH32,
    SEED,
    Case,
    Draw,
    _bech32_polymod,
    base58check,
    base62_crc32,
    bech32,
    build,
    mark,
)
from benchmarks.redaction_gen import dev as dev_half
from benchmarks.redaction_gen import eval as eval_half
from benchmarks.redaction_gen import heldout as held
from benchmarks.redaction_gen import heldout2 as held2
from benchmarks.redaction_gen import heldout3 as held3

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


# -- dev-3 (heldout.py, the first held-out half, looked at and now development): its invariants --


def _held(per_class: int, seed: int = held.SEED) -> list[Case]:
    return build(held.HALF, held.specs(), per_class, seed=seed, framer=held.frame)


def test_the_held_out_half_shares_no_class_name_language_or_spelling_with_the_development_splits() -> None:
    ho = held.specs()
    earlier = {(s.family, s.name) for s in dev_half.specs() + eval_half.specs()}
    assert not {(s.family, s.name) for s in ho} & earlier
    assert {s.family for s in ho} == FAMILIES
    assert not set(held.PROSE) & (set(dev_half.PROSE) | set(eval_half.PROSE))
    assert not {tuple(n) for n in held.NAMES} & {tuple(n) for n in dev_half.NAMES + eval_half.NAMES}
    assert len([lang for lang in held.PROSE if not lang.startswith("en")]) >= 25
    assert sum(s.kind == "secret" for s in ho) >= 40
    assert sum(s.kind == "lookalike" for s in ho) >= 10
    assert held.SEED != SEED


def test_no_phrase_of_the_held_out_prose_is_in_a_development_split() -> None:
    """Each held-out template's words (the value taken out) appear in neither development file."""
    earlier = "\n".join(Path(m.__file__ or "").read_text(encoding="utf-8") for m in (dev_half, eval_half))
    for templates in held.PROSE.values():
        for template in templates:
            for words in re.split(r"\{\w+\}", template):
                words = words.strip(" :：—-")
                if len(words) >= 6:
                    assert words not in earlier, words


def test_the_held_out_half_is_deterministic_and_every_span_is_the_marked_value() -> None:
    first, again = _held(3), _held(3)
    assert first == again
    assert _held(3, seed=1) != first
    assert [c.text for c in first] != [c.text for c in build("heldout", held.specs(), 3)]  # its own framing
    for case in first:
        assert case.half == "heldout"
        assert "\x01" not in case.text
        assert "\x02" not in case.text
        assert all(0 <= a < b <= len(case.text) for a, b in case.spans)
        assert all(p.strip() == p and p for p in case.pieces), case.cls  # no piece is a framing prefix
        assert case.kind in ("secret", "lookalike")


def test_a_held_out_case_framed_as_json_parses_and_holds_its_pieces() -> None:
    framed = 0
    for case in _held(6):
        if not case.text.startswith(('{"stdout"', '{"output"', '{"file_path"', '{"type":"function_call"')):
            continue
        framed += 1
        outer = json.loads(case.text)
        inner = outer.get("stdout") or outer.get("output") or outer.get("content")
        if inner is None:
            inner = json.loads(outer["arguments"])["command"]
        for piece in case.pieces:
            assert json.loads(f'"{piece}"') in inner
    assert framed > 50


def test_a_held_out_case_escaped_into_a_jsonl_line_keeps_its_spans() -> None:
    for case in _held(2):
        line = as_jsonl(case)
        assert json.loads(line.text)["content"] == case.text
        assert [json.loads(f'"{p}"') for p in line.pieces] == case.pieces


def test_held_out_addresses_carry_valid_checksums() -> None:
    checked = 0
    chain = [s for s in held.specs() if s.name == "chain-addresses-and-tx"]
    for case in build(held.HALF, chain, 40, seed=held.SEED, framer=held.frame):
        for piece in case.pieces:
            if piece.startswith(("cosmos1", "ltc1")):
                hrp, data = piece.rsplit("1", 1)
                values = [BECH32.index(c) for c in data]
                expanded = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]
                assert _bech32_polymod(expanded + values) == 1
                checked += 1
            elif piece.startswith("T") and len(piece) == 34:
                n = 0
                for ch in piece:
                    n = n * 58 + B58.index(ch)
                raw = n.to_bytes(25, "big")
                assert raw[0] == 0x41
                assert raw[-4:] == hashlib.sha256(hashlib.sha256(raw[:-4]).digest()).digest()[:4]
                checked += 1
    assert checked >= 5


def test_the_benchmark_builds_five_splits_and_holds_out_none_once_all_were_looked_at() -> None:
    assert [s.half for s in SPLITS] == ["dev", "eval", "heldout", "heldout2", "heldout3"]
    # heldout2 measured (so looked at) 2026-12-07, heldout3 2026-12-08: a new half must be written
    assert [s.held_out for s in SPLITS] == [False, False, False, False, False]
    assert "looked at" in SPLITS[1].title
    assert SPLITS[2].title == "dev-3 (looked at, now development)"
    assert SPLITS[3].title == "dev-4 (looked at, now development)"
    assert SPLITS[4].title == "dev-5 (looked at, now development)"
    assert split_cases(SPLITS[4], 2) == _held3(2)
    assert split_cases(SPLITS[3], 2) == _held2(2)
    assert split_cases(SPLITS[2], 2) == _held(2)
    assert split_cases(SPLITS[1], 2) == build("eval", eval_half.specs(), 2)


def test_no_split_imports_another() -> None:
    for module, others in (
        (dev_half, ("eval", "heldout", "heldout2", "heldout3")),
        (eval_half, ("dev", "heldout", "heldout2", "heldout3")),
        (held, ("dev", "eval", "heldout2", "heldout3")),
        (held2, ("dev", "eval", "heldout", "heldout3")),
        (held3, ("dev", "eval", "heldout", "heldout2")),
    ):
        source = Path(module.__file__ or "").read_text(encoding="utf-8")
        for other in others:
            assert not re.search(rf"^\s*(from|import)\b.*\b{other}\b", source, re.MULTILINE)


# -- dev-4 (heldout2.py, the second held-out half, looked at and now development): its invariants --


def _held2(per_class: int, seed: int = held2.SEED) -> list[Case]:
    return build(held2.HALF, held2.specs(), per_class, seed=seed, framer=held2.frame)


def test_the_new_held_out_half_shares_no_class_language_or_spelling_with_any_development_split() -> None:
    ho = held2.specs()
    earlier = dev_half.specs() + eval_half.specs() + held.specs()
    assert not {(s.family, s.name) for s in ho} & {(s.family, s.name) for s in earlier}
    assert {s.family for s in ho} == FAMILIES
    assert not set(held2.PROSE) & (set(dev_half.PROSE) | set(eval_half.PROSE) | set(held.PROSE))
    earlier_names = {tuple(n) for n in dev_half.NAMES + eval_half.NAMES + held.NAMES}
    assert not {tuple(n) for n in held2.NAMES} & earlier_names
    assert len([lang for lang in held2.PROSE if not lang.startswith("en")]) >= 25
    assert held2.SEED not in (SEED, held.SEED)


def test_no_phrase_of_the_new_held_out_prose_is_in_a_development_split() -> None:
    """Each template's words (the value taken out) appear in none of the development files."""
    earlier = "\n".join(
        Path(m.__file__ or "").read_text(encoding="utf-8") for m in (dev_half, eval_half, held)
    )
    for templates in held2.PROSE.values():
        for template in templates:
            for words in re.split(r"\{\w+\}", template):
                words = words.strip(" :：—-")
                if len(words) >= 6:
                    assert words not in earlier, words


def test_the_new_held_out_half_has_the_intended_size_and_every_class_yields_cases() -> None:
    cases = _held2(12)
    by_class: dict[str, int] = {}
    for case in cases:
        by_class[case.cls] = by_class.get(case.cls, 0) + 1
    assert set(by_class) == {f"{s.family}/{s.name}" for s in held2.specs()}
    assert set(by_class.values()) == {12}
    secrets = sum(c.kind == "secret" for c in cases)
    assert 200 <= secrets <= 350
    assert 90 <= len(cases) - secrets <= 120


def test_each_prose_class_of_the_new_half_takes_every_one_of_its_languages_in_turn() -> None:
    for group, languages in held2.PROSE_GROUPS.items():
        spec = next(s for s in held2.specs() if s.name == group)
        texts = [
            c.text for c in build(held2.HALF, [spec], len(languages), seed=held2.SEED, framer=held2.frame)
        ]
        for lang, templates in languages.items():
            heads = [
                re.split(r"\{\w+\}", t)[0].strip() or re.split(r"\{\w+\}", t)[1].strip() for t in templates
            ]
            assert any(h in text for text in texts for h in heads), (group, lang)


def test_the_new_held_out_half_is_deterministic_and_every_span_is_the_marked_value() -> None:
    first, again = _held2(3), _held2(3)
    assert first == again
    assert _held2(3, seed=1) != first
    assert [c.text for c in first] != [c.text for c in build(held2.HALF, held2.specs(), 3)]  # own framing
    for case in first:
        assert case.half == "heldout2"
        assert "\x01" not in case.text
        assert "\x02" not in case.text
        assert all(0 <= a < b <= len(case.text) for a, b in case.spans)
        assert all(p.strip() == p and p for p in case.pieces), case.cls  # no piece holds framing
        assert case.kind in ("secret", "lookalike")


def test_the_new_framing_keeps_the_marked_text_whole() -> None:
    """What the class marked is what the spans hold: framing may cut a piece at a line break (to put
    its own prefix there), never add to it or drop from it."""
    snippets: list[str] = []

    def recording(draw: Draw, snippet: str, kind: str) -> str:
        snippets.append(snippet)
        return held2.frame(draw, snippet, kind)

    cases = build(held2.HALF, held2.specs(), 6, seed=held2.SEED, framer=recording)
    assert len(cases) == len(snippets)
    for case, snippet in zip(cases, snippets, strict=True):
        marked = re.findall("\x01([^\x02]*)\x02", snippet)
        assert "".join(marked).replace("\n", "") == "".join(case.pieces).replace("\n", ""), case.cls


def test_a_new_held_out_case_escaped_into_a_jsonl_line_keeps_its_spans() -> None:
    for case in _held2(2):
        line = as_jsonl(case)
        assert json.loads(line.text)["content"] == case.text
        assert [json.loads(f'"{p}"') for p in line.pieces] == case.pieces


def _b58decode(text: str, size: int) -> bytes:
    n = 0
    for ch in text:
        n = n * 58 + B58.index(ch)
    return n.to_bytes(size, "big")


def _bech32_valid(text: str) -> bool:
    hrp, data = text.rsplit("1", 1)
    values = [BECH32.index(c) for c in data]
    expanded = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]
    return _bech32_polymod(expanded + values) == 1


def test_the_new_held_out_keys_and_addresses_carry_valid_checksums() -> None:
    wanted = {"chain-secret-encodings", "peer-keys-certs-and-publishable"}
    specs = [s for s in held2.specs() if s.name in wanted]
    seen: set[str] = set()
    for case in build(held2.HALF, specs, 40, seed=held2.SEED, framer=held2.frame):
        for piece in case.pieces:
            if piece.startswith(("ed25519e_sk1", "suiprivkey1", "addr1")):
                assert _bech32_valid(piece), piece
                seen.add(piece.rsplit("1", 1)[0])
            elif piece.startswith(("xprv", "edsk")):
                size = 82 if piece.startswith("xprv") else 40
                raw = _b58decode(piece, size)
                assert raw[-4:] == hashlib.sha256(hashlib.sha256(raw[:-4]).digest()).digest()[:4]
                seen.add(piece[:4])
            elif len(piece) == 56 and piece[0] in "SG" and piece.isupper():
                raw = base64.b32decode(piece + "=" * (-len(piece) % 8))
                assert raw[0] == (18 << 3 if piece[0] == "S" else 6 << 3)
                assert int.from_bytes(raw[-2:], "little") == held2.crc16_xmodem(raw[:-2])
                seen.add(piece[0])
            elif piece.endswith(".onion"):
                raw = base64.b32decode(piece.removesuffix(".onion").upper())
                check = hashlib.sha3_256(b".onion checksum" + raw[:32] + b"\x03").digest()[:2]
                assert raw[32:34] == check
                assert raw[34] == 3
                seen.add("onion")
    assert seen >= {"ed25519e_sk", "suiprivkey", "addr", "xprv", "edsk", "S", "G", "onion"}


def test_crc16_xmodem_matches_its_reference_value() -> None:
    assert held2.crc16_xmodem(b"123456789") == 0x31C3


def test_the_new_held_out_half_is_the_one_documented_as_written() -> None:
    """docs/redaction-measured.md records the half's digest as written: a change to it (or to the shared
    drawing it uses) after that makes this fail, so a half edited after it was written cannot pass as
    held out."""
    digest = hashlib.sha256()
    for case in split_cases(SPLITS[3], 12):
        digest.update(repr(case).encode())
    documented = (Path(__file__).resolve().parents[1] / "docs" / "redaction-measured.md").read_text(
        encoding="utf-8"
    )
    assert digest.hexdigest() in documented


# -- dev-5 (heldout3.py, the third held-out half, looked at and now development): its generator's invariants --

_EARLIER = (dev_half, eval_half, held, held2)


def _held3(per_class: int, seed: int = held3.SEED) -> list[Case]:
    return build(held3.HALF, held3.specs(), per_class, seed=seed, framer=held3.frame)


def test_the_third_held_out_half_shares_no_class_language_or_spelling_with_any_other_split() -> None:
    ho = held3.specs()
    earlier = [s for m in _EARLIER for s in m.specs()]
    assert not {(s.family, s.name) for s in ho} & {(s.family, s.name) for s in earlier}
    assert not {s.name for s in ho} & {s.name for s in earlier}
    assert {s.family for s in ho} == FAMILIES
    assert not set(held3.PROSE) & {lang for m in _EARLIER for lang in m.PROSE}
    assert not {tuple(n) for n in held3.NAMES} & {tuple(n) for m in _EARLIER for n in m.NAMES}
    assert len([lang for lang in held3.PROSE if not lang.startswith("en")]) >= 25
    assert held3.SEED not in (SEED, held.SEED, held2.SEED)


def test_the_third_half_s_shapes_are_in_no_other_split_s_file() -> None:
    """Its token prefixes, cookie names, schemes, key labels and look-alike kinds (``UNSEEN``) are
    written in its own generator and in none of the other four."""
    head, tail = Path(held3.__file__ or "").read_text(encoding="utf-8").split("UNSEEN = (", 1)
    body = head + tail.split("\n)\n", 1)[1]  # the generator without the list itself
    earlier = "\n".join(Path(m.__file__ or "").read_text(encoding="utf-8") for m in _EARLIER)
    for shape in held3.UNSEEN:
        assert shape in body, shape
        assert shape not in earlier, shape


def test_no_phrase_of_the_third_half_s_prose_is_in_another_split() -> None:
    """Each template's words (the value taken out) appear in none of the other split files."""
    earlier = "\n".join(Path(m.__file__ or "").read_text(encoding="utf-8") for m in _EARLIER)
    for templates in held3.PROSE.values():
        for template in templates:
            for words in re.split(r"\{\w+\}", template):
                words = words.strip(" :：—-")
                if len(words) >= 6:
                    assert words not in earlier, words


def test_the_third_held_out_half_has_the_intended_size_and_every_class_yields_its_cases() -> None:
    cases = _held3(12)
    by_class: dict[str, int] = {}
    for case in cases:
        by_class[case.cls] = by_class.get(case.cls, 0) + 1
    specs = held3.specs()
    assert set(by_class) == {f"{s.family}/{s.name}" for s in specs}
    assert set(by_class.values()) == {12}
    assert len(specs) == 35
    assert sum(s.kind == "secret" for s in specs) == 26
    assert sum(s.kind == "lookalike" for s in specs) == 9
    assert sum(c.kind == "secret" for c in cases) == 312
    assert sum(c.kind == "lookalike" for c in cases) == 108


def test_each_prose_class_of_the_third_half_takes_its_languages_in_turn() -> None:
    for group, languages in held3.PROSE_GROUPS.items():
        spec = next(s for s in held3.specs() if s.name == group)
        order = list(languages)
        cases = build(held3.HALF, [spec], 2 * len(order), seed=held3.SEED, framer=held3.frame)
        for i, case in enumerate(cases):
            lang = order[i % len(order)]
            heads = [re.split(r"\{\w+\}", t)[0].strip() for t in languages[lang]]
            assert any(h in case.text for h in heads), (group, lang, case.text)


def test_the_third_held_out_half_is_deterministic_and_every_span_is_the_marked_value() -> None:
    first, again = _held3(3), _held3(3)
    assert first == again
    assert _held3(3, seed=1) != first
    assert [c.text for c in first] != [c.text for c in build(held3.HALF, held3.specs(), 3)]  # own framing
    for case in first:
        assert case.half == "heldout3"
        assert "\x01" not in case.text
        assert "\x02" not in case.text
        assert all(0 <= a < b <= len(case.text) for a, b in case.spans)
        assert all(p.strip() == p and p for p in case.pieces), case.cls  # no piece holds framing
        assert case.kind in ("secret", "lookalike")


def test_the_third_half_s_framing_keeps_the_marked_text_whole() -> None:
    """What the class marked is what the spans hold: framing may cut a piece at a line break (to put
    its own prefix there), never add to it or drop from it."""
    snippets: list[str] = []

    def recording(draw: Draw, snippet: str, kind: str) -> str:
        snippets.append(snippet)
        return held3.frame(draw, snippet, kind)

    cases = build(held3.HALF, held3.specs(), 12, seed=held3.SEED, framer=recording)
    assert len(cases) == len(snippets)
    for case, snippet in zip(cases, snippets, strict=True):
        marked = re.findall("\x01([^\x02]*)\x02", snippet)
        assert "".join(marked).replace("\n", "") == "".join(case.pieces).replace("\n", ""), case.cls


def test_a_third_half_case_escaped_into_a_jsonl_line_keeps_its_spans() -> None:
    for case in _held3(2):
        line = as_jsonl(case)
        assert json.loads(line.text)["content"] == case.text
        assert [json.loads(f'"{p}"') for p in line.pieces] == case.pieces


def test_the_third_half_s_checksummed_values_are_valid() -> None:
    """BitLocker recovery keys (each block a multiple of 11), Matrix recovery keys (prefix and parity
    byte), base-62 CRC-32 tails of the invented keys that carry one, and Taproot addresses (Bech32m)."""
    wanted = {"recovery-keys-with-checksums", "invented-provider-keys", "dns-vapid-taproot-and-ca-keys"}
    specs = [s for s in held3.specs() if s.name in wanted]
    seen: set[str] = set()
    for case in build(held3.HALF, specs, 60, seed=held3.SEED, framer=held3.frame):
        for piece in case.pieces:
            blocks = piece.split("-")
            if len(blocks) == 8 and all(len(b) == 6 and b.isdigit() for b in blocks):
                assert all(int(b) % 11 == 0 and int(b) < 720896 for b in blocks)
                seen.add("bitlocker")
            elif len(piece) > 50 and piece.count(" ") > 8 and set(piece.replace(" ", "")) <= set(B58):
                raw = _b58decode(piece.replace(" ", ""), 35)
                assert raw[:2] == b"\x8b\x01"
                parity = 0
                for byte in raw[:-1]:
                    parity ^= byte
                assert raw[-1] == parity
                seen.add("matrix")
            elif piece.startswith(("qnt_live_", "pnd_pat_", "trv_tok_")):
                body, check = piece[:-6].split("_", 2)[-1], piece[-6:]
                assert base62_crc32(body) == check
                seen.add(piece[:3])
            elif piece.startswith("bc1p"):
                hrp, data = piece.rsplit("1", 1)
                values = [BECH32.index(c) for c in data]
                expanded = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]
                assert _bech32_polymod(expanded + values) == 0x2BC830A3
                seen.add("taproot")
    assert seen >= {"bitlocker", "matrix", "qnt", "pnd", "trv", "taproot"}


def test_the_third_held_out_half_is_the_one_documented_as_written() -> None:
    """docs/redaction-measured.md records the half's digest as written: a change to it (or to the shared
    drawing it uses) after that makes this fail, so a half edited after it was written cannot pass as
    held out."""
    digest = hashlib.sha256()
    for case in split_cases(SPLITS[4], 12):
        digest.update(repr(case).encode())
    documented = (Path(__file__).resolve().parents[1] / "docs" / "redaction-measured.md").read_text(
        encoding="utf-8"
    )
    assert digest.hexdigest() in documented

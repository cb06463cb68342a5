"""The engine: placeholders and their keyed tags, JSON escaping, offsets, the commit-gate API,
idempotence and the line-length bound (property tests)."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.redaction import (
    MAX_GROWTH_PER_REDACTION,
    PLACEHOLDER_MAX_LEN,
    PLACEHOLDER_RE,
    Redactor,
    rule_names,
)
from tests.pipeline.redaction.conftest import KEY
from tests.pipeline.redaction.secret_fakes import PROVIDER_SAMPLES, crc_token, password, pem, rand

PLACEHOLDER = re.compile(r"\[REDACTED:([a-z0-9-]+):([0-9a-f]{4})\]")


def test_placeholder_format_and_counts(redactor: Redactor) -> None:
    token = crc_token("ghp_")
    result = redactor.redact(f"GITHUB_TOKEN={token}\nother={token}\n")
    tags = PLACEHOLDER.findall(result.text)
    assert tags[0] == tags[1]
    assert tags[0][0] == "github-token"
    assert result.counts == {"github-token": 2}
    assert result.total == 2


def test_tags_are_keyed(redactor: Redactor) -> None:
    a, b = crc_token("ghp_"), crc_token("ghp_")
    tag = lambda r, s: PLACEHOLDER.search(r.redact(f"t {s}").text).group(2)  # type: ignore[union-attr]  # noqa: E731
    assert tag(redactor, a) == tag(Redactor(KEY), a)  # same secret, same key: same tag
    assert tag(redactor, a) != tag(redactor, b)  # different secrets (16-bit tags: this pair differs)
    assert tag(Redactor(b"another-installation-key-000000"), a) != tag(redactor, a)


def test_every_rule_name_fits_the_placeholder() -> None:
    for name in rule_names():
        placeholder = f"[REDACTED:{name}:abcd]"
        assert PLACEHOLDER_RE.fullmatch(placeholder.encode())
        assert len(placeholder) <= PLACEHOLDER_MAX_LEN


def test_json_escaped_one_and_two_levels(redactor: Redactor) -> None:
    pw, token, key = password(), crc_token("ghp_"), pem()
    inner = f'DB_PASSWORD="{pw}"\nGITHUB_TOKEN={token}\n{key}\n'
    once = json.dumps({"type": "tool_result", "content": inner})
    twice = json.dumps({"type": "function_call_output", "output": json.dumps({"output": inner})})
    for text in (once, twice):
        out = redactor.redact(text).text
        assert pw not in out
        assert token not in out
        assert "PRIVATE KEY" not in out
        assert json.loads(out)  # still valid JSON: placeholders need no escaping
        counts = redactor.redact(text).counts
        assert counts == {"password": 1, "github-token": 1, "private-key": 1}


def test_find_reports_rules_and_character_spans_not_values(redactor: Redactor) -> None:
    token = crc_token("ghp_")
    text = f"héllo 🙂 token={token} ok"
    findings = redactor.find(text)
    assert len(findings) == 1
    f = findings[0]
    assert f.rule == "github-token"
    assert text[f.start : f.end] == token
    assert token not in repr(f)
    assert token not in str(f)


def test_scan_clean_is_the_commit_gate(redactor: Redactor) -> None:
    clean = "# Memory\n- deploys use `make release`; the token lives in 1Password\n"
    assert redactor.scan_clean(clean) == []
    dirty = clean + f"- OPENAI_API_KEY=sk-proj-{rand(74)}T3BlbkFJ{rand(74)}\n"
    assert redactor.scan_clean(dirty) == ["openai-api-key"]
    assert redactor.scan_clean(redactor.redact(dirty).text) == []  # placeholders are not secrets


def test_overlapping_rules_make_one_placeholder(redactor: Redactor) -> None:
    token = crc_token("ghp_")
    out = redactor.redact(f"curl -H 'Authorization: Bearer {token}' https://api.github.com").text
    assert out.count("[REDACTED:") == 1
    assert "[REDACTED:github-token:" in out


def test_foreign_placeholders_and_empty_input(redactor: Redactor) -> None:
    for text in (
        "",
        "password=[REDACTED]",
        "token: [REDACTED_SECRET]",
        "Bearer [REDACTED:bearer-token:1f3a]",
    ):
        assert redactor.redact(text).text == text


def test_key_too_short_is_refused() -> None:
    with pytest.raises(ValueError, match="16 bytes"):
        Redactor(b"short")


# --- properties -------------------------------------------------------------------------------

_secret = st.sampled_from([make for _, make in PROVIDER_SAMPLES]).map(lambda make: make())  # type: ignore[operator]
_assignment = st.builds(
    lambda name, sep, v: f"{name}{sep}{v}",
    st.sampled_from(
        ["DB_PASSWORD", "api_key", '"token"', "secret", "x-api-key", "Authorization: Bearer", "-p"]
    ),
    st.sampled_from(["=", ": ", '": "', " = ", " ", '=\\"']),
    st.one_of(
        st.builds(password),
        st.builds(lambda: rand(24)),
        st.sampled_from(["changeme", "${X}", "<token>", "true"]),
    ),
)
_url = st.builds(lambda pw: f"postgres://app:{pw}@db:5432/x", st.builds(lambda: rand(16)))
_noise = st.text(st.characters(codec="utf-8", exclude_characters="\n\r"), max_size=40)
_fragment = st.one_of(
    _noise,
    _secret,
    _assignment,
    _url,
    st.sampled_from(["[REDACTED:github-token:1f3a]", '\\"', "\\n", '"', " "]),
)
_line = st.lists(_fragment, min_size=1, max_size=8).map(" ".join)


def _json_wrap(text: str, levels: int) -> str:
    for _ in range(levels):
        text = json.dumps(text)[1:-1]
    return text


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(line=_line, levels=st.integers(min_value=0, max_value=2))
def test_redaction_is_idempotent_and_bounded(redactor: Redactor, line: str, levels: int) -> None:
    line = _json_wrap(line, levels)
    first = redactor.redact(line)
    second = redactor.redact(first.text)
    assert second.text == first.text
    assert second.counts == {}
    assert redactor.find(first.text) == []
    # The stated bound: a line grows by at most MAX_GROWTH_PER_REDACTION per secret redacted on it.
    assert len(first.text) <= len(line) + MAX_GROWTH_PER_REDACTION * first.total
    assert "\n" not in first.text


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(_line, min_size=1, max_size=6), with_key=st.booleans())
def test_multiline_never_gains_lines(redactor: Redactor, lines: list[str], with_key: bool) -> None:
    text = "\n".join(lines) + ("\n" + pem() if with_key else "")
    first = redactor.redact(text)
    assert first.text.count("\n") <= text.count("\n")
    assert redactor.redact(first.text).text == first.text


def test_report_lists_kept_candidates_with_reason_and_character_span(redactor: Redactor) -> None:
    from pipeline.redaction import Reason

    text = "é DB_PASSWORD=changeme\napi_key = API_KEY_NAME\nsecret: ab\nTOKEN=ghp_" + "x" * 36 + "\n"
    report = redactor.report(text)
    assert report.result == redactor.redact(text)
    assert report.result.total == 0
    reasons = {(k.rule, text[k.start : k.end]): k.reason for k in report.kept}
    assert reasons == {
        ("password", "changeme"): Reason.PLACEHOLDER,
        ("secret-assignment", "API_KEY_NAME"): Reason.REFERENCE,
        ("secret-assignment", "ab"): Reason.TOO_SHORT,
        ("github-token", "ghp_" + "x" * 36): Reason.PLACEHOLDER,
        ("secret-assignment", "ghp_" + "x" * 36): Reason.PLACEHOLDER,
    }
    assert report.found["password"] == 1
    assert all("changeme" not in repr(k) for k in report.kept)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(line=_line)
def test_report_redacts_exactly_like_redact(redactor: Redactor, line: str) -> None:
    report = redactor.report(line)
    assert report.result == redactor.redact(line)
    for k in report.kept:
        assert 0 <= k.start < k.end <= len(line)


def test_a_placeholder_ends_a_stated_value_and_anchors_no_rule(redactor: Redactor) -> None:
    # found by the idempotence property: the first pass redacted SECRET's value, and the second read
    # on past the placeholder (and the "secret" inside it) to the next line's header value
    line = " SECRET 00000001234A Authorization: Bearer=phRQ5kKIXQJM4HyctAJcXshC"
    first = redactor.redact(line)
    assert "00000001234A" not in first.text
    assert redactor.redact(first.text).text == first.text

"""Provider token rules: every family is caught in prose, env, JSON (escaped once and twice) and
named in the placeholder; look-alikes and placeholders survive."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from pipeline.redaction import Redactor
from tests.pipeline.redaction.secret_fakes import HEX, PROVIDER_SAMPLES, rand

SURROUNDINGS: list[Callable[[str], str]] = [
    lambda v: f"the key is {v} - can you check why it fails?",
    lambda v: f"export SERVICE_CREDENTIAL={v}\n",
    lambda v: json.dumps({"output": f'config: {{"value": "{v}"}}\n'}),
    lambda v: json.dumps({"output": json.dumps({"stdout": f"TOKEN={v}\nPORT=80\n"})}),
    lambda v: f"`{v}`",
]


@pytest.mark.parametrize(
    ("rule", "make"), PROVIDER_SAMPLES, ids=[f"{r}-{i}" for i, (r, _) in enumerate(PROVIDER_SAMPLES)]
)
@pytest.mark.parametrize("surround", range(len(SURROUNDINGS)))
def test_provider_token_is_redacted_and_named(
    redactor: Redactor, rule: str, make: Callable[[], str], surround: int
) -> None:
    secret = make()
    text = SURROUNDINGS[surround](secret)
    result = redactor.redact(text)
    assert secret not in result.text
    assert all(secret[i : i + 12] not in result.text for i in range(len(secret) - 11) if i >= 12)
    assert f"[REDACTED:{rule}:" in result.text
    assert result.counts.get(rule, 0) >= 1


LOOKALIKES = [
    "GITHUB_TOKEN=ghp_" + "x" * 36,
    "token: gho_****",
    "OPENAI_API_KEY=sk-...",
    "use sk-your-openai-key-here as the key",
    "the task-management-dashboard-component-v2 build",  # `sk-` inside a word
    "shelf_life_in_days_for_products_abcdefghijklmnopq",  # `hf_` inside a word
    "STRIPE_KEY=sk_test_xxxxxxxxxxxxxxxxxxxxxxxx",
    "ANTHROPIC_API_KEY=sk-ant-xxxxx",
    "msg.content and msg.role are strings",  # `sg.`
    "commit 3f2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a",
    "uuid 6f1c2a9e-0b7d-4c1e-9a3f-2d8e7b6c5a41",
    'ETag: "d41d8cd98f00b204e9800998ecf8427e"',
    "key-value stores such as redis are fast",
    "integrity sha512-" + "A" * 20 + "b" * 20 + "==",
    "xoxb-your-token-here",
    "eyJpZCI6MTIzLCJ0cyI6MTc2MTAwMDAwMH0=",  # a pagination cursor: base64 JSON, one segment
]


@pytest.mark.parametrize("text", LOOKALIKES)
def test_lookalikes_survive(redactor: Redactor, text: str) -> None:
    assert redactor.redact(text).text == text


def test_mailchimp_needs_hex_before_the_datacenter(redactor: Redactor) -> None:
    assert redactor.redact("run with --use-us1 region").text == "run with --use-us1 region"
    secret = rand(32, HEX) + "-us6"
    assert secret not in redactor.redact(f"MC={secret}").text


def test_discord_token_near_the_word(redactor: Redactor) -> None:
    import base64

    token = base64.b64encode(b"123456789012345678").decode().rstrip("=") + "." + rand(6) + "." + rand(38)
    out = redactor.redact(f"my discord bot token {token}").text
    assert token not in out
    assert "[REDACTED:discord-bot-token:" in out

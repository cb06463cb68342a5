"""Issue 33: private keys in more containers and encodings, caught by their structure (a bech32
name that says secret with a valid checksum, 64 bytes of base58 beside a key's word, the private
members of an XML RSA key, PEM under an editor's gutter); public material and broken checksums kept."""

from __future__ import annotations

import base64
import json
import random

import pytest

from pipeline.redaction import Redactor

_CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
_GEN = (0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)
_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def _polymod(values: list[int]) -> int:
    chk = 1
    for v in values:
        top = chk >> 25
        chk = (chk & 0x1FFFFFF) << 5 ^ v
        for i in range(5):
            chk ^= _GEN[i] if (top >> i) & 1 else 0
    return chk


def _bech32(hrp: str, payload: bytes, constant: int = 1) -> str:
    acc = bits = 0
    data: list[int] = []
    for byte in payload:
        acc, bits = (acc << 8) | byte, bits + 8
        while bits >= 5:
            bits -= 5
            data.append((acc >> bits) & 31)
    if bits:
        data.append((acc << (5 - bits)) & 31)
    expanded = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]
    mod = _polymod(expanded + data + [0] * 6) ^ constant
    check = [(mod >> 5 * (5 - i)) & 31 for i in range(6)]
    return hrp + "1" + "".join(_CHARSET[d] for d in data + check)


def _b58(raw: bytes) -> str:
    n = int.from_bytes(raw, "big")
    out = ""
    while n:
        n, r = divmod(n, 58)
        out = _B58[r] + out
    return "1" * (len(raw) - len(raw.lstrip(b"\0"))) + out


RNG = random.Random(3307)


def _raw(n: int) -> bytes:
    return bytes(RNG.randrange(256) for _ in range(n))


def _wrappings(text: str) -> list[str]:
    return [text, json.dumps({"content": text})[1:-1], json.dumps({"c": json.dumps({"d": text})})]


def _gone(redactor: Redactor, text: str, secret: str) -> None:
    for wrapped in _wrappings(text):
        out = redactor.redact(wrapped).text
        assert secret[:24] not in out, out
        assert secret[-24:] not in out, out


def _kept(redactor: Redactor, text: str) -> None:
    for wrapped in _wrappings(text):
        assert redactor.redact(wrapped).text == wrapped


SECRET_BECH32 = [
    _bech32("zeta_sk", _raw(64)),
    _bech32("orbitprivkey", b"\0" + _raw(32)),
    _bech32("nodesec", _raw(32), 0x2BC830A3),  # bech32m
]


@pytest.mark.parametrize("secret", SECRET_BECH32)
def test_bech32_whose_name_says_secret_is_caught(redactor: Redactor, secret: str) -> None:
    _gone(redactor, f"$ wallet export --format bech32\n  {secret}\n", secret)
    _gone(redactor, f"│ exported │ {secret} │", secret)


def test_bech32_public_names_and_broken_checksums_are_kept(redactor: Redactor) -> None:
    _kept(redactor, f"address: {_bech32('zetapub', _raw(32))}")
    broken = _bech32("orbitprivkey", _raw(32))
    broken = broken[:-1] + ("q" if broken[-1] != "q" else "p")
    _kept(redactor, f"value: {broken}")


def test_a_base58_keypair_beside_a_key_word_is_caught(redactor: Redactor) -> None:
    secret = _b58(b"\x07" + _raw(63))
    _gone(redactor, f"Your secret key (store it safely):\n{secret}\n", secret)


def _b64(n: int) -> str:
    return base64.b64encode(_raw(n)).decode()


def test_the_private_members_of_an_xml_rsa_key_are_caught(redactor: Redactor) -> None:
    members = {"P": _b64(128), "Q": _b64(128), "DP": _b64(128), "DQ": _b64(128), "InverseQ": _b64(128)}
    members["D"] = _b64(256)
    inner = "".join(f"<{k}>{v}</{k}>" for k, v in members.items())
    text = f"<RSAKeyValue><Modulus>{_b64(256)}</Modulus><Exponent>AQAB</Exponent>{inner}</RSAKeyValue>"
    for value in members.values():
        _gone(redactor, text, value)


def test_a_public_xml_rsa_key_and_html_paragraphs_are_kept(redactor: Redactor) -> None:
    _kept(redactor, f"<RSAKeyValue><Modulus>{_b64(256)}</Modulus><Exponent>AQAB</Exponent></RSAKeyValue>")
    _kept(redactor, f"<p>{_b64(48)}</p><q>quoted</q>")


def test_a_pem_private_key_under_a_numbered_gutter_is_caught(redactor: Redactor) -> None:
    body = [_b64(48) for _ in range(6)]
    lines = [f"  {20 + i}\u2192{line}" for i, line in enumerate(body)]
    text = (
        "  19\u2192-----BEGIN TPM PRIVATE KEY-----\n"
        + "\n".join(lines)
        + "\n  26\u2192-----END TPM PRIVATE KEY-----"
    )
    for line in body:
        _gone(redactor, text, line)


def test_a_certificate_under_a_numbered_gutter_is_kept(redactor: Redactor) -> None:
    lines = [f"  {20 + i}\u2192{_b64(48)}" for i in range(6)]
    _kept(
        redactor,
        "  19\u2192-----BEGIN CERTIFICATE-----\n"
        + "\n".join(lines)
        + "\n  26\u2192-----END CERTIFICATE-----",
    )


def test_a_bech32_secret_assigned_to_a_name_is_caught(redactor: Redactor) -> None:
    secret = _bech32("zeta_sk", _raw(32))
    _gone(redactor, f"NODE_IDENTITY={secret}", secret)


def test_a_seed_alone_on_the_line_after_a_key_word_is_caught_in_json_too(redactor: Redactor) -> None:
    seed = base64.b32encode(b"\x90" + _raw(34)).decode().rstrip("=")
    _gone(redactor, f"$ chain keys show deployer\n{seed}\n", seed)
    _gone(redactor, f"$ chain keys show deployer\n   {seed}", seed)  # the last line of a tool's output

"""A public key is kept whatever words stand around it (issue 33's look-alikes): an OpenSSH public
key's body names its type in its own first bytes, so no rule's context turns it into a secret. The
defect this pins: the prose rule read ``key ssh-ed25519 AAAA...`` in memd's own trust log as a key
stated in prose, and every machine's sync stopped at its secret gate."""

from __future__ import annotations

import base64
import json
import os

import pytest

from pipeline.redaction import Redactor
from pipeline.sync.trustlog import TRUST, Entry


def _blob(kind: str, body: int) -> str:
    name = kind.encode()
    wire = len(name).to_bytes(4, "big") + name + len(os.urandom(body)).to_bytes(4, "big") + os.urandom(body)
    return base64.b64encode(wire).decode()


KEYS = {
    "ed25519": "ssh-ed25519 " + _blob("ssh-ed25519", 32),
    "rsa": "ssh-rsa " + _blob("ssh-rsa", 257),
    "ecdsa": "ecdsa-sha2-nistp256 " + _blob("ecdsa-sha2-nistp256", 65),
    "sk": "sk-ssh-ed25519@openssh.com " + _blob("sk-ssh-ed25519@openssh.com", 32),
}


@pytest.mark.parametrize("key", list(KEYS.values()), ids=list(KEYS))
@pytest.mark.parametrize(
    "frame",
    [
        "the key is {k} on the server",
        "key {k}",
        "my ssh key: {k}",
        "Der Schlüssel ist {k}",
        "token {k}",
        'authorized: "{k}"',
    ],
)
def test_an_openssh_public_key_is_kept_in_any_words(redactor: Redactor, key: str, frame: str) -> None:
    text = frame.format(k=key)
    assert redactor.redact(text).text == text
    escaped = json.dumps({"content": text})
    assert redactor.redact(escaped).text == escaped


def test_memds_own_trust_log_entry_is_kept_whole(redactor: Redactor) -> None:
    entry = Entry(
        action=TRUST,
        principal="memd-04a421805ac8e72dba20002af0c1234@vm",
        fingerprint="",
        by="SHA256:Vb8mmZ0VOKc2r5Bnq9FFh0yqPcAR4mYRTs1nEz2XyHk",
        at="2026-12-07T12:00:00Z",
        key=KEYS["ed25519"],
    )
    text = entry.text().decode()
    assert redactor.redact(text).text == text


def test_a_private_key_beside_a_public_one_is_still_caught(redactor: Redactor) -> None:
    private = base64.b64encode(b"openssh-key-v1\x00" + os.urandom(120)).decode()
    text = f"public: {KEYS['ed25519']}\nprivate key: {private}\n"
    out = redactor.redact(text).text
    assert KEYS["ed25519"] in out
    assert private[10:40] not in out

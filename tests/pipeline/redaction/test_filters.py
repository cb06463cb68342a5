"""The value checks: dotted names read as code unless their parts are random."""

from __future__ import annotations

import pytest

from pipeline.redaction.filters import Level, dotted_name, is_reference, value_is_secret


@pytest.mark.parametrize(
    "name",
    [
        "self.client.token",
        "os.path.join",
        "std::string",
        "node->next",
        "IPv4Address.__init__",
        "c_void_p.from_buffer",
        "f_back.f_back.f_back",
        "sha3module.digest",
        "code2op.get",
        "base64EncodedData.decode",
        "sha256Digest.hex",
    ],
)
def test_code_names_are_references(name: str) -> None:
    assert dotted_name(name.encode())
    assert is_reference(name.encode())
    assert not value_is_secret(name.encode(), Level.SECRET)


@pytest.mark.parametrize(
    "token",
    ["YtuC7Kcis1wS5YI_LBjiEbupDV.Jx9hbx7S_hk.G", "aB3dE5fG7hJ9kL1.mNoPq", "x9Kq2Lm7.Zp"],
)
def test_random_parts_are_not_a_name(token: str) -> None:
    assert not dotted_name(token.encode())
    assert not is_reference(token.encode())
    assert value_is_secret(token.encode(), Level.SECRET)


def test_other_references_unchanged() -> None:
    for ref in (b"API_TOKEN", b"apiToken", b"_private", b"v1.2.3", b"https://x.example/a", b"./secrets.env"):
        assert is_reference(ref), ref

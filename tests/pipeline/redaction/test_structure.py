"""Issue 33: secrets caught by what makes them secrets (a credential's name in any language and
syntax, a key's own markers, a value joined or split over lines), and look-alikes kept."""

from __future__ import annotations

import base64
import json

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.hazmat.primitives.serialization import pkcs12

from pipeline.redaction import Redactor, family


def _caught(redactor: Redactor, text: str, secret: str) -> str:
    for wrapped in (text, json.dumps({"content": text})[1:-1], json.dumps({"c": text}, ensure_ascii=False)):
        out = redactor.redact(wrapped).text
        assert secret not in out, out
        assert "[REDACTED:" in out, out
    return redactor.redact(text).text


NAMED_MISSES = [
    ("Password for root on the NAS = letmein123", "letmein123"),
    ("use etrhsdbv42 as the password for the test account", "etrhsdbv42"),
    ("zip -P s3cretZip9 backup.zip db.sql", "s3cretZip9"),
    ("set -x GITHUB_TOKEN ghx8Hq2mZp4Lw9Rt7Vb", "ghx8Hq2mZp4Lw9Rt7Vb"),
    ("Authorization: Bearer x7Kq9", "x7Kq9"),
    ("curl -H 'Authorization: Bearer abc123XYZ' https://api.acme.dev", "abc123XYZ"),
    ("AZURE_DEVOPS_EXT_PAT=q3z7yfk2m4w5j6n7p8r9s2t3u4v5w6x7y2z3a4b5c6d7e2f3g4h5", "q3z7yfk2m4w5j6n7p8r9s2t3"),
    ("hasło do serwera to Kot123!x", "Kot123!x"),
    ("Moje hasło to zielonyKot7", "zielonyKot7"),
]


@pytest.mark.parametrize(("text", "secret"), NAMED_MISSES)
def test_the_issues_named_misses_are_caught(redactor: Redactor, text: str, secret: str) -> None:
    _caught(redactor, text, secret)


def test_a_base64_url_with_a_password_is_caught(redactor: Redactor) -> None:
    blob = base64.b64encode(b"https://admin:Tr0ub4dor3@files.acme.dev/x").decode()
    _caught(redactor, f"PROXY_B64={blob[:8]}{blob[8:]}", blob)
    assert redactor.redact(f"echo {blob}").text != f"echo {blob}"


PROSE = [  # 27 languages: their own words for password, key, token, PIN and their own "is"
    ("la contraseña es Perro#2024", "Perro#2024"),
    ("il token è q7Rk2m9XwLp4Zt8vNb3c", "q7Rk2m9XwLp4Zt8vNb3c"),
    ("Şifre: Kedi2024!", "Kedi2024!"),
    ("mật khẩu là meo12345", "meo12345"),
    ("비밀번호는 hunter2abc 입니다", "hunter2abc"),
    ("パスワードは neko1234 です", "neko1234"),
    ("密码是 mima8888x", "mima8888x"),
    ("heslo je Pes12345", "Pes12345"),
    ("salasana on Kissa2024", "Kissa2024"),
    ("jelszó: Macska99", "Macska99"),
    ("пароль: Кот2024x", "Кот2024x"),
    ("parola este Caine2024", "Caine2024"),
    ("lösenordet är Katt2024!", "Katt2024!"),
    ("adgangskoden er Hund2024", "Hund2024"),
    ("passordet er Hund2024x", "Hund2024x"),
    ("kata sandi adalah Kucing2024", "Kucing2024"),
    ("كلمة المرور هي Qitt2024", "Qitt2024"),
    ("הסיסמה היא Hatul2024", "Hatul2024"),
    ("मेरा पासवर्ड Billi2024 है", "Billi2024"),
    ("รหัสผ่านคือ Maew2024", "Maew2024"),
    ("κωδικός είναι Gata2024", "Gata2024"),
    ("wachtwoord is Kat2024x", "Kat2024x"),
    ("Passwort lautet Katze2024", "Katze2024"),
    ("le mot de passe est Chat2024", "Chat2024"),
    ("a senha é Gato2024", "Gato2024"),
    ("la clé API est 8f7d6c5b4a3e2d1f0a9b", "8f7d6c5b4a3e2d1f0a9b"),
    ("der API-Schlüssel ist Zk8Pq2Lm9Wx4Rt7Y", "Zk8Pq2Lm9Wx4Rt7Y"),
    ("Klucz API: UH8s6f1ZDKFoANCWF0vr41ZY", "UH8s6f1ZDKFoANCWF0vr41ZY"),
    ("my PIN is 4829", "4829"),
    ("PIN码是868460", "868460"),
    ("the access token 75513beabac65c7161cd48f3b9cf3e27 expires tomorrow", "75513beabac65c7161cd48f3"),
    ("the wifi passphrase is hekiru-hidi-dotu-gulefi", "hekiru-hidi-dotu-gulefi"),
    ("mon mdp c'est Lox6f#8mgfub", "Lox6f#8mgfub"),
    ("सर्वर का पासवर्ड xocZ5t4pmv0k है।", "xocZ5t4pmv0k"),
    ("服务器密码是kaqxgxfOljsgn", "kaqxgxfOljsgn"),
]


@pytest.mark.parametrize(("text", "secret"), PROSE)
def test_a_secret_stated_in_prose_in_any_language_is_caught(
    redactor: Redactor, text: str, secret: str
) -> None:
    out = _caught(redactor, text, secret)
    assert out.split("[REDACTED")[0] == text.split(secret)[0]  # the sentence before it is kept


PROSE_KEPT = [
    "The password must be at least 12 characters.",
    "Reset your password in the settings page.",
    "The password is stored in Vault.",
    "the password was changed on 2024-01-15 by the admin",
    "la contraseña es incorrecta",
    "le mot de passe est incorrect",
    "hasło musi mieć co najmniej 12 znaków",
    "パスワードを忘れた場合はリセットしてください",
    "the public key is in ~/.ssh/id_ed25519.pub",
    "the key fingerprint is SHA256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d",
    "the token expires in 3600 seconds",
]


@pytest.mark.parametrize("text", PROSE_KEPT)
def test_prose_about_secrets_without_a_value_is_kept(redactor: Redactor, text: str) -> None:
    assert redactor.redact(text).text == text


def _keys() -> list[tuple[str, bytes]]:
    out = []
    for key in (rsa.generate_private_key(65537, 2048), ec.generate_private_key(ec.SECP256R1())):
        for fmt in (serialization.PrivateFormat.PKCS8, serialization.PrivateFormat.TraditionalOpenSSL):
            out.append(
                (
                    f"{type(key).__name__}-{fmt}",
                    key.private_bytes(serialization.Encoding.DER, fmt, serialization.NoEncryption()),
                )
            )
        out.append(
            (
                f"{type(key).__name__}-encrypted",
                key.private_bytes(
                    serialization.Encoding.DER,
                    serialization.PrivateFormat.PKCS8,
                    serialization.BestAvailableEncryption(b"pw"),
                ),
            )
        )
    ed = ed25519.Ed25519PrivateKey.generate()
    out.append(
        (
            "ed25519",
            ed.private_bytes(
                serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            ),
        )
    )
    out.append(
        (
            "pkcs12",
            pkcs12.serialize_key_and_certificates(
                b"x", ed, None, None, serialization.BestAvailableEncryption(b"pw")
            ),
        )
    )
    return out


def test_base64_der_private_keys_are_caught_by_their_markers(redactor: Redactor) -> None:
    for label, der in _keys():
        blob = base64.b64encode(der).decode()
        out = _caught(redactor, f"here it is: {blob}", blob[:60])
        assert "private-key" in out, label


def test_public_keys_in_base64_der_are_kept(redactor: Redactor) -> None:
    for key in (rsa.generate_private_key(65537, 2048), ec.generate_private_key(ec.SECP256R1())):
        der = key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        text = f"pubkey: {base64.b64encode(der).decode()}"
        assert redactor.redact(text).text == text


KEY_MATERIAL = [
    (
        "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5",
        "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5",
    ),
    (
        "WIF: 5HueCGU8rMjxEXxiPuD5BDku4MkFqeZyd4dZ1jvhTVqvbTLvyTJ",
        "5HueCGU8rMjxEXxiPuD5BDku4MkFqeZyd4dZ1jvhTVqvbTLvyTJ",
    ),
    (
        "private key: e8f32e723decf4051aefac8e2c93c9c5b214313817cdb01a1494b917c8436b35",
        "e8f32e723decf4051aefac8e2c93c9c5b214313817cdb01a1494b917c8436b35",
    ),
    (
        '{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","d":"nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"}',
        "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A",
    ),
]


@pytest.mark.parametrize(("text", "secret"), KEY_MATERIAL)
def test_key_material_in_other_encodings_is_caught(redactor: Redactor, text: str, secret: str) -> None:
    _caught(redactor, text, secret)


def test_a_wif_shaped_string_with_a_wrong_checksum_is_kept(redactor: Redactor) -> None:
    text = "WIF: 5HueCGU8rMjxEXxiPuD5BDku4MkFqeZyd4dZ1jvhTVqvbTLvyTK"  # last character changed
    assert redactor.redact(text).text == text


SPLIT = [
    ('token = "abcd1234" +\n  "efgh5678ijkl"', "efgh5678ijkl"),
    ('$password = "Xk9mQ2Lp" .\n    "7wR4zTv8";', "7wR4zTv8"),
    ('"token": ["Xk9mQ2", "Lp7wR4zT", "v8Nc3Yq1"]', "Lp7wR4zT"),
    (
        '{\n  "secret": [\n    "L-buMfxZVilt_OJmXcAw",\n    "omGJ6r4khZEZH1SYtN1I"\n  ]\n}',
        "omGJ6r4khZEZH1SYtN1I",
    ),
    ("export API_TOKEN=Xk9mQ2Lp7w\\\n  R4zTv8Nc3Yq", "R4zTv8Nc3Yq"),
]


@pytest.mark.parametrize(("text", "secret"), SPLIT)
def test_a_value_joined_or_split_over_lines_is_caught_whole(
    redactor: Redactor, text: str, secret: str
) -> None:
    out = redactor.redact(text).text
    assert secret not in out, out


LOOK_ALIKES = [
    "token: op://Private/GitHub/token",
    "token: ${{ secrets.GITHUB_TOKEN }}",
    "password: vault:secret/data/db#password",
    "password: ENC[AES256_GCM,data:Tr0ub4dor,iv:abc,tag:def,type:str]",
    "image: nginx@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "id: 123e4567-e89b-12d3-a456-426614174000",
    "address: 0x742d35Cc6634C0532925a3b844Bc454e4438f44e",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl user@host",
    "token_type: bearer",
    "Bearer tokens are sent in the Authorization header.",
]


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_look_alikes_are_kept(redactor: Redactor, text: str) -> None:
    assert redactor.redact(text).text == text


def test_every_rule_has_a_family_and_the_new_ones_are_named(redactor: Redactor) -> None:
    assert family("secret-assignment") == "credential-slot"
    assert family("secret-in-prose") == "prose"
    assert family("private-key") == "key-material"
    assert family("github-token") == "token-shape"
    findings = redactor.find("la clé API est 8f7d6c5b4a3e2d1f0a9b")
    assert [family(f.rule) for f in findings] == ["prose"]


SLOTS = [
    ('server.login("deploy@example.test", "bhK3lk*hubju1p")', "bhK3lk*hubju1p"),
    ('requests.get(url, auth=("ci", "Tr0ub4dor&3"))', "Tr0ub4dor&3"),
    ("terraform apply --app-secret lya0tbsbuYj!ddzn", "lya0tbsbuYj!ddzn"),
    ('"Main": "Server=db;Database=app;User Id=jenkins;Password=vrmkcfcAwqcgfdo;"', "vrmkcfcAwqcgfdo"),
    (
        'const signer = new Wallet("0x60a270b8e75e903d8983fed82689b4d5b33b0702c2de6aff8e78c85d94152325")',
        "60a270b8e75e903d8983fed8",
    ),
]


@pytest.mark.parametrize(("text", "secret"), SLOTS)
def test_credential_slots_by_position_and_compound_flags_are_caught(
    redactor: Redactor, text: str, secret: str
) -> None:
    _caught(redactor, text, secret)


def test_a_call_with_two_strings_that_are_not_credentials_is_left_to_its_name(redactor: Redactor) -> None:
    text = 'logger.info("starting", "worker")'
    assert redactor.redact(text).text == text

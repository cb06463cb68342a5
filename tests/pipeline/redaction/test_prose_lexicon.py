"""Secrets stated in prose in languages none of the corpus splits hold: the multilingual lexicon
(``prose_lexicon.txt``: a language's words for a password, a PIN, a key or a token, their stems,
its ways of saying "is") and one structure (name, short connecting words, value) catch them; prose
about a secret without one is kept. Every case is written here, none taken from the corpus
generator."""

from __future__ import annotations

import json
import unicodedata

import pytest

from pipeline.redaction import Redactor
from pipeline.redaction.lexicon import KINDS, LexiconError, lexicon, parse

PW, WEAK, PIN, KEY, HEX = (
    "kd8Tqz!mwp3",
    "falcon2291",
    "40917",
    "Zq8Wd3Lk7Xr2Mn5Vt9Hb4Jc1",
    "3f9c2ab17e8d4c6f9a0b1c2d3e4f5a6b",
)


def _caught(redactor: Redactor, text: str, secret: str) -> None:
    """``secret`` is gone from ``text`` as it stands and JSON-escaped (as a transcript holds it)."""
    for wrapped in (text, json.dumps({"content": text})[1:-1], json.dumps({"c": text}, ensure_ascii=False)):
        out = redactor.redact(wrapped).text
        assert secret not in out, out
        assert "[REDACTED:" in out, out


def _kept(redactor: Redactor, text: str) -> None:
    for wrapped in (text, json.dumps({"c": text}), json.dumps({"c": text}, ensure_ascii=False)):
        assert redactor.redact(wrapped).text == wrapped


OTHER_LANGUAGES = [  # Icelandic, Afrikaans, Galician, Maltese, Nepali, Bengali, Tamil, Kannada, ...
    (f"Lykilorðið er {PW}", PW),
    (f"lykilorð netþjónsins: {WEAK}", WEAK),
    (f"API-lykillinn er {KEY}", KEY),
    (f"Die wagwoord is {PW}", PW),
    (f"wagwoord vir die bediener: {WEAK}", WEAK),
    (f"O contrasinal é {PW}", PW),
    (f"A chave da API é {HEX}", HEX),
    (f"Il-password hija {PW}", PW),
    (f"पासवर्ड {PW} हो", PW),
    (f"সার্ভারের পাসওয়ার্ড: {WEAK}", WEAK),
    (f"পাসওয়ার্ড হল {PW}", PW),
    (f"சர்வர் கடவுச்சொல்: {WEAK}", WEAK),
    (f"ಪಾಸ್‌ವರ್ಡ್ {PW} ಆಗಿದೆ", PW),
    (f"പാസ്‌വേഡ് {PW} ആണ്", PW),
    (f"پټنوم {PW} دی", PW),
    (f"сервердин сырсөзү {WEAK}", WEAK),
    (f"Пароль ад сервера: {WEAK}", WEAK),
    (f"šifra za server: {WEAK}", WEAK),
    (f"Kata laluan ialah {PW}", PW),
    (f"iphasiwedi yeseva: {WEAK}", WEAK),
    (f"Kalmar sirri ita ce {PW}", PW),
    (f"Şîfre {PW} e", PW),
    (f"serweriň paroly: {WEAK}", WEAK),
    (f"Loyniorðið er {PW}", PW),
    (f"Tenimiafina dia {PW}", PW),
    # a language's words the file does not hold: "API" and "PIN" qualify the local word
    (f"Zorbat API {KEY}", KEY),
    (f"ok: API klorvenu ta {KEY}", KEY),
    (f"PIN numbaru {PIN}", PIN),
    # languages of the splits, said otherwise
    (f"der neue Schlüssel für die API lautet {KEY}", KEY),
    (f"Das WLAN-Passwort ist {WEAK}", WEAK),
    (f"パスワードを{PW}に変更しました", PW),
    (f"管理员密码是 {WEAK}", WEAK),
    (f"Новий пароль — {WEAK}", WEAK),
    (f'the passcode is "{PIN}"', PIN),
    (f"password -> {WEAK}", WEAK),
    (f"ok so pw's {PW}", PW),
    (f"u: admin  p: {WEAK}", WEAK),
    (f"the new root password will be {PW}", PW),
    (f"so Kupuhipa ko {PW}", PW),  # a short word the file does not hold links a strong value
    # the value first, then a copula or a particle, then the name ending the clause
    (f"ok, {WEAK} is my password", WEAK),
    (f"{PW} ist das Passwort.", PW),
    (f"{PW}がパスワードです", PW),
    (f"{PW}가 비밀번호입니다", PW),
]


@pytest.mark.parametrize(("text", "secret"), OTHER_LANGUAGES)
def test_a_secret_stated_in_prose_in_other_languages(redactor: Redactor, text: str, secret: str) -> None:
    _caught(redactor, text, secret)


@pytest.mark.parametrize(
    "text",
    [
        "Lykilorðið verður að vera að minnsta kosti 12 stafir.",
        "Die wagwoord het verval.",
        "O contrasinal é incorrecto.",
        "পাসওয়ার্ড ভুল হয়েছে।",
        "கடவுச்சொல் தவறானது",
        "Сырсөз туура эмес",
        "Kata laluan telah tamat tempoh.",
        "Iphasiwedi ayilungile.",
        "Lozinka mora imati najmanje 8 znakova.",
        "Şîfre divê 12 tîp be.",
        "the password must contain at least 1 digit",
        "set PIN 4 on the GPIO header",
        "pin the dependency to version 2.31.0",
        "API v2 returns 404 for that",
        "The API key is rotated every 90 days.",
        "the API returned request id 7f9c2a1b3d4e5f6a7b8c9d0e1f2a3b4c for the failed call",
        "the API call took 1532ms",
        "API version 2024-06-01",
        "API endpoint: https://api.example.com/v1/users",
        "PIN code length: 6",
        "Enter your PIN to continue",
        "use the key from ~/.ssh/id_ed25519",
        "パスワードは8文字以上必要です",
        "비밀번호는 8자 이상이어야 합니다",
        "Mật khẩu phải có ít nhất 8 ký tự",
        "password reset for user u_42 failed",
        "user: ops  pass: ${DB_PASSWORD}",
        "menu: main  p: 3",
        "v1.2.3 is the password",
        "step2 is the password reset",
        "Python3 is the key.",
        "the password must be at least 12 chars",
        "password via env1",
        "Passwort für root2",
        '{"user": "bob2", "password": "x"}',
    ],
)
def test_prose_about_a_secret_in_other_languages_is_kept(redactor: Redactor, text: str) -> None:
    _kept(redactor, text)


@pytest.mark.parametrize(
    "text",
    [
        f"the PUBLIC key is {HEX}",  # in any case
        f"the host\tkey is {HEX}",  # blanks between
        f"the public\nkey is {HEX}",  # a line break just before the key word
        f"der öffentliche Schlüssel ist {HEX}",  # the words of other languages, as written
    ],
)
def test_a_key_word_after_a_word_naming_a_public_key_states_no_secret(redactor: Redactor, text: str) -> None:
    assert redactor.redact(text).text == text


def test_the_lexicon_covers_the_languages_developers_write_in() -> None:
    lex = lexicon()
    assert len(lex.languages) >= 60
    assert set(lex.names.values()) == set(KINDS)
    scripts = {unicodedata.name(word[-1], "").split()[0] for word in lex.names}
    assert {
        "LATIN",
        "CYRILLIC",
        "GREEK",
        "HEBREW",
        "ARABIC",
        "DEVANAGARI",
        "BENGALI",
        "GURMUKHI",
        "GUJARATI",
        "TAMIL",
        "TELUGU",
        "KANNADA",
        "MALAYALAM",
        "SINHALA",
        "THAI",
        "LAO",
        "KHMER",
        "MYANMAR",
        "GEORGIAN",
        "ARMENIAN",
        "ETHIOPIC",
        "HANGUL",
        "KATAKANA",
        "CJK",
    } <= scripts, scripts
    assert "slaptažod" in lex.stems
    assert lex.names["slaptažod"] == "password"
    assert "ہے" in lex.finals
    assert "は" in lex.particles
    assert "yw" in lex.copulas


def test_a_stem_takes_in_the_words_its_stem_covers() -> None:
    lex = parse("xx password: hesl*, heslo, heslem*\nxx copula: je\n")
    assert lex.names == {"hesl": "password"}
    assert lex.stems == frozenset({"hesl"})


@pytest.mark.parametrize("line", ["xx secret: foo", "password: foo", "xx password foo"])
def test_a_malformed_lexicon_line_is_refused(line: str) -> None:
    with pytest.raises(LexiconError):
        parse(line)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"ok ᏗᎦᎳᏫᎢᏍᏗ ᎠᏓᏅᏖᏗ: {PW}", PW),  # a label in a language and script the lexicon does not hold
        ("ܡܠܬܐ ܕܥܠܠܐ: Ab3kdQz9x", "Ab3kdQz9x"),
        (f"ok ካብ ዝኾነ ቃል፦ {PW}", PW),
    ],
)
def test_a_chosen_password_after_a_label_in_another_script(
    redactor: Redactor, text: str, secret: str
) -> None:
    for wrapped in (text, json.dumps({"c": text}, ensure_ascii=False)):
        out = redactor.redact(wrapped).text
        assert secret not in out, out


@pytest.mark.parametrize(
    "text",
    [
        "Модель: iPhone15",
        "型号: Python3 ok",
        "版本: v2.3.1",
        "文件: src/main.py",
        "заметка: a=b&c=d1",
        "Модель: GPT-4o",
        "Ошибка: ECONNRESET",
        "сервер: falcon2291",
        "Ссылка: https://example.com/A1b!",
    ],
)
def test_a_name_or_a_version_after_a_label_in_another_script_is_kept(redactor: Redactor, text: str) -> None:
    _kept(redactor, text)

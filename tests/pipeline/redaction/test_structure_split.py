"""Issue 33: a secret split into pieces is caught by the structure that joins them (operators,
adjacent literals, join and concat calls, arrays, appends to one variable or file, numbered parts of
a credential's name, continuation lines), whatever the language; lists that are not one value are
kept."""

from __future__ import annotations

import json

import pytest

from pipeline.redaction import Redactor

# fakes of this file's own: random-looking halves, never a real credential
A = "Qm7vTz2Lp9XcR4wK8sJd"
B = "Hn3Yb6Fg1UaE5oZi0Mqx"
C = "Wr8Ks2Dp4Lt6Vc9Nb1Gh"


def _wrappings(text: str) -> list[str]:
    return [text, json.dumps({"content": text})[1:-1], json.dumps({"c": json.dumps({"d": text})})]


def _all_gone(redactor: Redactor, text: str, *pieces: str) -> None:
    for wrapped in _wrappings(text):
        out = redactor.redact(wrapped).text
        for piece in pieces:
            assert piece not in out, out
        assert "[REDACTED:" in out, out


def _kept(redactor: Redactor, text: str) -> None:
    for wrapped in _wrappings(text):
        assert redactor.redact(wrapped).text == wrapped


JOINED = [
    # a join call over an array, the separator an empty literal (the receiver or the argument)
    f'signing_secret = "".join([\n    "{A}",\n    "{B}",\n])',
    f'const webhookSecret = [\n  "{A}",\n  "{B}",\n].join("");',
    f'hmacKey := strings.Join([]string{{\n\t"{A}",\n\t"{B}",\n}}, "")',
    f"$dbAuth = implode('', ['{A}', '{B}']);",
    # a concat call whose name comes after it
    f"SELECT CONCAT(\n  '{A}',\n  '{B}'\n) AS signing_key;",
    f'=CONCAT("{A}";\n  "{B}";\n  "{C}")',
    # concatenation operators of several languages, over lines
    f'let apiSecret = "{A}" +\n    "{B}";',
    f"$token = '{A}' .\n  '{B}';",
    f'local auth_token = "{A}" ..\n  "{B}"',
    f'Dim clientSecret As String = "{A}" & _\n    "{B}"',
    # adjacent literals: printf's arguments, a bash array printed joined
    f"printf '%s' '{A}' '{B}' | vault login -",
    f"pieces=(\n  '{A}'\n  '{B}'\n)\nexport SESSION_SECRET=\"$(printf %s \"${{pieces[@]}}\")\"",
    # an editor's gutter before each line
    f'   12→SERVICE_TOKEN = "".join([\n   13→    "{A}",\n   14→    "{B}",\n   15→])',
]


@pytest.mark.parametrize("text", JOINED)
def test_pieces_joined_by_code_are_caught(redactor: Redactor, text: str) -> None:
    _all_gone(redactor, text, A, B)


APPENDED = [
    f'$s = "{A}"\n$s += "{B}"\n$env:REPO_TOKEN = $s',
    f'DEPLOY_SECRET="{A}"\nDEPLOY_SECRET+="{B}"\nexport DEPLOY_SECRET',
    f"echo -n '{A}' > ~/.config/cli/token\necho '{B}' >> ~/.config/cli/token",
    f"SIGNING_KEY_PART1={A}\nSIGNING_KEY_PART2={B}",
]


@pytest.mark.parametrize("text", APPENDED)
def test_pieces_appended_to_one_variable_or_file_are_caught(redactor: Redactor, text: str) -> None:
    _all_gone(redactor, text, A, B)


CONTINUED = [
    f"set PUBLISH_KEY={A}^\n{B}",  # cmd's caret continues a line
    f"data:\n  webhook-secret: {A}\n    {B}\n  zone: eu-central",  # YAML folds a plain scalar
    f'  40 │ REFRESH_TOKEN = "{A}\n     │ {B}"\n  41 │ retries = 3',  # a gutter with no number
]


@pytest.mark.parametrize("text", CONTINUED)
def test_values_continued_on_the_next_line_are_caught(redactor: Redactor, text: str) -> None:
    _all_gone(redactor, text, A, B)


KEPT = [
    # a list of hashes or of items under a key's word is not one value split
    'keys = [\n  "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b",\n  "2c26b46b68ffc68ff99b453c1d30413413422d70",\n]',
    '"integrity": "sha512-Zk3Lq9Vb2Nc8Xd7Fe6Gh5Jk4Lm3Nb2Vc1Xz9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0Lz==",\n"resolved": "x"',
    'locales = ["en-US", "fr-FR",\n  "de-DE"]',
    'print("Loading " + "settings")',
    'msg = "token " + "expired, please log in again"',
    "printf '%s' 'hello' 'world'",
    'TAGS="alpha"\nTAGS+=" beta"',
]


@pytest.mark.parametrize("text", KEPT)
def test_lists_and_joined_words_are_kept(redactor: Redactor, text: str) -> None:
    _kept(redactor, text)


def _xxd(data: bytes) -> str:
    rows = []
    for i in range(0, len(data), 16):
        row = data[i : i + 16]
        hexes = " ".join(row[j : j + 2].hex() for j in range(0, len(row), 2))
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in row)
        rows.append(f"{i:08x}: {hexes:<39}  {text}")
    return "\n".join(rows)


def test_a_token_read_through_a_hex_dump_is_caught(redactor: Redactor) -> None:
    token = A + B + C
    text = "$ xxd ~/.cache/cli/session_token\n" + _xxd(token.encode() + b"\n")
    rows = [token[i : i + 16] for i in range(0, len(token), 16)]
    _all_gone(redactor, text, *[r for r in rows if len(r) == 16])


def test_a_hex_dump_of_text_or_binary_is_kept(redactor: Redactor) -> None:
    _kept(redactor, "$ xxd notes.txt\n" + _xxd(b"the meeting moved to thursday at ten\n"))
    _kept(redactor, "$ xxd logo.png\n" + _xxd(bytes(range(0, 256, 7))))


def test_a_value_sent_in_labelled_parts_is_caught(redactor: Redactor) -> None:
    text = f"first half of the signing secret: {A}{B}\n(the rest in a moment)\nsecond half: {C}{A}"
    _all_gone(redactor, text, A + B, C + A)


def test_a_labelled_part_with_no_credential_named_is_kept(redactor: Redactor) -> None:
    _kept(redactor, f"build finished\nsecond half: {C}{A}")


MORE_JOINED = [
    f'access_token = f"{A}" f"{B}"',  # adjacent f-strings
    f"db_secret:\n  - {A}\n  - {B}\n",  # a YAML sequence of pieces under a credential's name
    f"const apiKey = `{A}` +\n  `{B}`;",  # template literals
]


@pytest.mark.parametrize("text", MORE_JOINED)
def test_more_ways_of_joining_pieces_are_caught(redactor: Redactor, text: str) -> None:
    _all_gone(redactor, text, A, B)


def test_a_yaml_sequence_of_hashes_or_names_is_kept(redactor: Redactor) -> None:
    _kept(redactor, "api_keys:\n  - 9f86d081884c7d659a2feaa0c55ad015\n  - 2c26b46b68ffc68ff99b453c1d304134\n")
    _kept(redactor, "secret_names:\n  - database\n  - cache\n")


LATER = [
    f'parts = ["{A}", "{B}"]\nREFRESH_TOKEN = "".join(parts)',
    f'const chunks = [\n  "{A}",\n  "{B}",\n];\nconst clientSecret = chunks.join("");',
    f'segs := []string{{"{A}", "{B}"}}\nsigningKey := strings.Join(segs, "")',
]


@pytest.mark.parametrize("text", LATER)
def test_a_list_of_pieces_joined_later_into_a_credential_is_caught(redactor: Redactor, text: str) -> None:
    _all_gone(redactor, text, A, B)


def test_a_list_of_words_joined_later_is_kept(redactor: Redactor) -> None:
    _kept(redactor, 'parts = ["alpha", "beta"]\nlabel_token_count = ", ".join(parts)')


OTHER_SYNTAX = [
    f'var apiKey = @"{A}" +\n    @"{B}";',  # C# verbatim and interpolated literals
    f'var apiKey = $"{A}" + $"{B}";',
    f"$secret = '{A}';\n$secret .= '{B}';",  # PHP's and VB's appending assignments
    f'authToken = "{A}"\nauthToken &= "{B}"',
    f'String token = "{A}".concat("{B}");',  # a method that joins
    f'api_key = [\n  "{A}",\n  "{B}",\n]',  # a TOML array with a trailing comma
]


@pytest.mark.parametrize("text", OTHER_SYNTAX)
def test_pieces_joined_in_other_syntaxes_are_caught(redactor: Redactor, text: str) -> None:
    _all_gone(redactor, text, A, B)


def test_arrays_and_words_under_other_names_are_kept(redactor: Redactor) -> None:
    _kept(redactor, 'regions = [\n  "eu-central-1",\n  "us-east-2",\n]')
    _kept(redactor, 'greeting = "Hello, ""world"')
    _kept(redactor, 'title = "Release notes".concat(" for 2.4")')


def test_a_shell_word_of_two_quoted_parts_is_caught(redactor: Redactor) -> None:
    text = f'export DB_TOKEN="{A}""{B}"'
    for wrapped in _wrappings(text)[:2]:  # as typed, and once JSON-escaped
        out = redactor.redact(wrapped).text
        assert A not in out, out
        assert B not in out, out


def test_a_token_wrapped_in_a_quoted_reply_is_caught(redactor: Redactor) -> None:
    token = (A + B + C + A).replace("Q", "-").replace("H", "_")  # 80 characters
    text = f"> On Tue, ops wrote:\n> for the nightly job:\n> {token[:60]}\n> {token[60:]}\n\nthanks"
    _all_gone(redactor, text, token[:60], token[60:])


def test_quoted_hashes_and_ids_wrapped_in_a_reply_are_kept(redactor: Redactor) -> None:
    digest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    _kept(redactor, f"> the build digest:\n> {digest}\n> {digest[:20]}\n")
    _kept(redactor, "> | name | value |\n> | ---- | ----- |\n> | retries | 3 |\n")

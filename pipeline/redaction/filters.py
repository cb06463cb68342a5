"""Cheap checks that tell a real secret value from a placeholder, a reference or an ordinary word.

Everything here works on ASCII ``bytes`` slices of the text being scanned and never logs or keeps
the value. The checks are deliberately conservative in one direction: when unsure whether a value
under a secret-looking name is a placeholder, it is treated as a secret (the cost of over-redaction
is a lost word in a memory; the cost of under-redaction is a leaked credential).
"""

from __future__ import annotations

import base64
import binascii
import re
from enum import IntEnum

from pipeline.redaction import envelopes
from pipeline.redaction.placeholders import (
    is_documented_example,
    is_placeholder_value,
    prefixed_sample,
    sample_jwt,
)
from pipeline.redaction.reasons import Reason

_STOPWORDS = frozenset(
    b"""true false null none nil undefined yes no on off required optional string str int integer bool
    boolean number object any bytes secret secrets password passwd passphrase token tokens apikey api_key
    api-key bearer basic key value values empty default env enabled disabled hidden masked redacted unset
    changeme changeit admin administrator root guest postgres mysql redis test testing example pass
    username user demo sample foo bar baz qux secretkey secret_key required jwt oauth oauth2 hmac sha256
    aes256 base64 plain plaintext sso saml ldap none null""".split()
)
"""Values that name a field or a type (``password: Password``, ``token: str``, ``secret: false``) where
a value may be code. A password written as a literal is judged by ``literal_password_verdict``,
which spares far fewer words: there ``postgres`` or ``admin`` is the password."""
_POINTER = (
    # what even a literal can point at: a URL, a version, a relative or Windows path
    rb"[A-Za-z][A-Za-z0-9+.-]*+://.*|"  # possessive: no "://" fails at once
    rb"v?[0-9]+(?:\.[0-9]+)+(?:[-+][\w.]+)?|(?:~|\.{1,2})/.*|[A-Za-z]:\\.*|file:.*|"
    # a secret manager's reference: where the secret lives, not the secret (``vault:secret/db#pw``)
    rb"(?i:" + envelopes.STORE_SCHEMES + rb"|ref|env):[A-Za-z0-9_.-]+[/#][A-Za-z0-9_./#:@-]*|"
    # a cloud resource's name (``arn:aws:secretsmanager:...:secret:prod/db-AbC123``): where, not what
    rb"arn:[a-z0-9-]+:[a-z0-9-]+:[a-z0-9-]*:[0-9]{0,12}:[A-Za-z0-9_./:@+=,-]+"
)
_REFERENCE = re.compile(
    # identifiers: snake, SCREAMING_SNAKE, camelCase, PascalCase, _private; and the pointers above
    rb"[a-z][a-z_]*|[A-Z][A-Z_]*|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[A-Z]?[a-z]+(?:[A-Z][a-z]+)*|_+[A-Za-z][A-Za-z_]*|"
    + _POINTER,
    re.S,
)
_POINTS_AT = re.compile(_POINTER, re.S)
_RANDOM_SEGMENT = re.compile(
    rb"(?:^|_)(?=[A-Z0-9]{16})(?=(?:[A-Z]*[0-9]){4})(?=(?:[0-9]*[A-Z]){4})[A-Z0-9]{16,}(?:_|$)"
)
"""A SCREAMING_SNAKE segment of 16 and more letters and digits, four of each at least: random, not a word."""
# dotted attributes: ``self.client``, ``std::vector``, ``ptr->next``; see dotted_name()
_DOTTED = re.compile(rb"(?:[A-Za-z_$][A-Za-z0-9_$]*(?:\.|::|->))+[A-Za-z_$][A-Za-z_$]*")
_LAST_PART = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_$"
_SEGMENT = re.compile(rb"\.|::|->")
_CHUNK = re.compile(rb"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_LETTER_DIGITS_LETTER = re.compile(rb"(?<=[A-Za-z])[0-9]+(?=[A-Za-z])")
_ABS_PATH = re.compile(rb"(?:/[\w.@-]+)+/?")
_PATH_WORD = re.compile(rb"/[a-z]{3,}(?:/|\.|$)|\.(?:json|pem|key|txt|ya?ml|toml|env|crt|p12|pfx)$")
_REL_PATH = re.compile(rb"(?:[\w@-][\w.@-]*/)+[\w@-][\w.@-]*\.[A-Za-z][A-Za-z0-9]{0,7}")
"""``assets/img/logo.4f9a2c1e.png``: folders, then a file with an extension (base64 has no dot)."""
_REF_START = re.compile(rb"[${<\[(*]|%[A-Za-z_(]|[@!*&#][A-Za-z_][A-Za-z0-9_]*$")
_UUID = re.compile(rb"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_B62 = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


class Level(IntEnum):
    """How strongly a name says its value is a secret; decides how much the value must prove."""

    KEY = 1  # a bare or qualified ``*_key``: the value must look random
    SECRET = 2  # secret, token, credential, auth, api key
    PASSWORD = 3  # password, passwd, passphrase, pwd, pass
    LITERAL_PASSWORD = 4
    """A password's name with its value written as a literal: quoted (``password = "letmein"``), or
    assigned to an upper-case name in an env file, a shell or YAML (``POSTGRES_PASSWORD=postgres``),
    where an unquoted word is a string, not a variable. However weak or common, such a value is
    the password; only a placeholder, a path, a type name or the name itself is spared."""


MAX_VALUE = 16384
"""Longer values (a wrapped block included) are data, not a credential."""
MIN_LEN = {Level.KEY: 16, Level.SECRET: 8, Level.PASSWORD: 6, Level.LITERAL_PASSWORD: 3}
MIN_DISTINCT = {Level.KEY: 10, Level.SECRET: 6, Level.PASSWORD: 4, Level.LITERAL_PASSWORD: 2}


def distinct(value: bytes) -> int:
    """How many different characters ``value`` uses: a cheap stand-in for entropy."""
    return len(set(value))


_DISTINCT_PREFIX = 32


def enough_distinct(value: bytes, count: int) -> bool:
    """``distinct(value) >= count``, deciding on a prefix first (a random value shows enough
    different characters early; a set of every byte of a long value costs microseconds)."""
    return len(set(value[:_DISTINCT_PREFIX])) >= count or (
        len(value) > _DISTINCT_PREFIX and len(set(value)) >= count
    )


_TYPE_WORDS = frozenset(
    b"""true false null none nil undefined yes no on off required optional string str int integer bool
    boolean number object any bytes empty default enabled disabled hidden masked redacted unset changeme
    changeit password passwd passphrase pass pwd""".split()
)
"""What a literal under a password's name may be without being one: a type, a switch, an empty
marker, or the field's own name (``password = "password"``, the placeholder of documentation)."""
_LITERAL_WORDS = 6
"""A literal of up to this many lower-case words is a passphrase (``"correct horse battery staple"``)."""
_PASSPHRASE = re.compile(rb"[a-z]+(?: [a-z]+)+")
_JSON_UNICODE = re.compile(rb"\\+u[0-9a-fA-F]{4}")


def literal_password_verdict(value: bytes) -> Reason | None:
    """``value_verdict`` for ``Level.LITERAL_PASSWORD``: weak and common passwords are passwords."""
    n = len(value)
    if n < MIN_LEN[Level.LITERAL_PASSWORD]:
        return Reason.TOO_SHORT
    if n > MAX_VALUE:
        return Reason.TOO_LONG
    if value.lower() in _TYPE_WORDS or _REF_START.match(value) is not None or is_placeholder_value(value):
        return Reason.PLACEHOLDER
    if _POINTS_AT.fullmatch(value) or (value[:1] == b"/" and _ABS_PATH.fullmatch(value)):
        return Reason.REFERENCE
    words = _JSON_UNICODE.sub(b"U", value) if b"\\" in value else value  # oubli\u00e9 is a word
    if b" " in words and not _SYMBOL_OR_DIGIT.search(words):
        # lower-case words are a passphrase (``correct horse battery staple``); a label is written
        # for people (``Mot de passe``, ``Enter your password``)
        if _SEED_PHRASE.fullmatch(value) or (
            value.count(b" ") < _LITERAL_WORDS and _PASSPHRASE.fullmatch(value)
        ):
            return None
        return Reason.WORDS
    if not enough_distinct(value, min(MIN_DISTINCT[Level.LITERAL_PASSWORD], n // 2)):
        return Reason.NOT_RANDOM
    return None


def is_placeholder(value: bytes) -> bool:
    """A template, mask, placeholder phrase, reference or stopword as a whole, rather than a
    credential (see ``placeholders``: a word inside a value does not count)."""
    return (
        value.lower() in _STOPWORDS
        or _REF_START.match(value) is not None
        or is_placeholder_value(value)
        or is_documented_example(value)
    )


def _oddities(segment: bytes) -> int:
    """Marks of a random string in an identifier's clothing: a lone letter inside a run of letters
    and digits (``C`` in ``tuC7K``) and digits between letters (``s1w``). Real names have few: of the 97k
    dotted names in CPython's standard library and this project's dependencies, 15 have two."""
    n = len(_LETTER_DIGITS_LETTER.findall(segment))
    for m in _CHUNK.finditer(segment):
        a, b = m.span()
        if b - a == 1 and segment[a:b].isalpha() and a > 0 and b < len(segment):
            n += segment[a - 1 : a].isalnum() and segment[b : b + 1].isalnum()
    return n


def dotted_name(value: bytes) -> bool:
    """``self.client.token`` or ``std::string``: a dotted attribute whose parts read as names.
    ``YtuC7Kcis1wS5YI_LBjiEbupDV.Jx9hbx7S_hk.G`` has the shape too, but its parts are random."""
    # The last part (after the last ``.``, ``::`` or ``->``) is letters, ``_`` and ``$`` alone: a value
    # whose last part is not fails here, before the pattern backtracks over every part to say so.
    cut = max(value.rfind(b"."), value.rfind(b":"), value.rfind(b">"))
    if cut < 0 or cut + 1 == len(value) or value[cut + 1 :].translate(None, _LAST_PART):
        return False
    if not _DOTTED.fullmatch(value):
        return False
    return sum(_oddities(seg) for seg in _SEGMENT.split(value)) < 2


def is_reference(value: bytes) -> bool:
    """A variable name, dotted attribute (``process.env.KEY!`` with TypeScript's non-null mark too),
    path (a relative one ending in a file's extension: an object key such as
    ``build/fe71ccfe/main.js``), URL or version number: code or a name, not a credential."""
    if _REFERENCE.fullmatch(value):
        return _RANDOM_SEGMENT.search(value) is None  # JDC_3383881D7DE318EE8069967DBCBE: a key, not a name
    if dotted_name(value):
        return True
    if value[-1:] == b"!" and b"." in value and dotted_name(value[:-1]):
        return True
    if b"/" in value and _REL_PATH.fullmatch(value):
        return True
    return value[:1] == b"/" and bool(_ABS_PATH.fullmatch(value) and _PATH_WORD.search(value))


_DIGIT = re.compile(rb"[0-9]")
_SEED_PHRASE = re.compile(rb"[a-z]{3,8}(?: [a-z]{3,8}){11,23}")
"""A BIP-39 recovery phrase (12 to 24 lower-case words): under a secret's name, words are the secret."""
_SYMBOL_OR_DIGIT = re.compile(rb"[0-9!#$%&*+=@^~|]")


def has_digit(value: bytes) -> bool:
    return _DIGIT.search(value) is not None


def _classes(value: bytes) -> int:
    """How many of lower case, upper case, digits and other characters ``value`` mixes."""
    return (value.upper() != value) + (value.lower() != value) + has_digit(value) + (not value.isalnum())


def value_verdict(value: bytes, level: Level) -> Reason | None:
    """Why ``value``, found under a name of strength ``level``, is *not* a credential; ``None`` when
    it is one."""
    if level is Level.LITERAL_PASSWORD:
        return literal_password_verdict(value)
    n = len(value)
    if n < MIN_LEN[level]:
        return Reason.TOO_SHORT
    if n > MAX_VALUE:
        return Reason.TOO_LONG
    if is_placeholder(value):
        return Reason.PLACEHOLDER
    if value[-1:] == b":" or is_reference(value):
        return Reason.REFERENCE
    if value.isdigit():
        return None if n >= (8 if level is Level.PASSWORD else 12) else Reason.TOO_SHORT
    if b" " in value and not _SYMBOL_OR_DIGIT.search(value):
        return None if _SEED_PHRASE.fullmatch(value) else Reason.WORDS
    if not enough_distinct(value, min(MIN_DISTINCT[level], n // 2)):
        return Reason.NOT_RANDOM
    if level is Level.PASSWORD:
        return None
    if level is Level.SECRET:
        return None if _classes(value) >= 2 else Reason.NOT_RANDOM
    return None if has_digit(value) and not _UUID.fullmatch(value) else Reason.SHAPE


def value_is_secret(value: bytes, level: Level) -> bool:
    """Would ``value``, found under a name of strength ``level``, be a credential?"""
    return value_verdict(value, level) is None


def token_body_ok(body: bytes, min_distinct: int = 8) -> bool:
    """A value with no fixed prefix to vouch for it (a bearer token, a Discord token): random-looking
    (``min_distinct`` different characters, or half its length) and not a placeholder as a whole."""
    return enough_distinct(body, min(min_distinct, len(body) // 2)) and not is_placeholder_value(body)


def basic_credentials(value: bytes) -> bool:
    """Does a ``Basic`` value decode to printable ``user:password``?"""
    try:
        raw = base64.b64decode(value + b"=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in raw and all(32 <= c < 127 for c in raw)


_SSH_BLOB = re.compile(rb"AAAA[A-Za-z0-9+/]{20,4096}={0,2}")
"""A run that may be an OpenSSH public key's body: its wire format starts with a 4-byte length
below 2**24, which base64 writes as ``AAAA``."""
_SSH_TYPE = re.compile(rb"(?:ssh|ecdsa-sha2|sk-ssh|sk-ecdsa-sha2|ssh-[a-z0-9]+)-[a-z0-9@.-]{2,60}")
_SSH_MAX_FIELDS = 16  # a certificate's fields; a key has 2 or 3


def ssh_key_type(value: bytes) -> bytes | None:
    """The key type if ``value`` is the base64 body of an OpenSSH public key or certificate, else
    None. Its wire format is a
    sequence of length-prefixed strings that must use up every byte, the first naming the key type
    (``ssh-ed25519``, ``ssh-rsa``, ``ecdsa-sha2-nistp256``, ``sk-ssh-ed25519@openssh.com``, a
    ``-cert-v01@openssh.com``): a public key whatever words stand around it, never a secret. A run
    with anything appended fails to use up its bytes and is judged as before."""
    try:
        wire = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None
    fields: list[bytes] = []
    i = 0
    while i < len(wire):
        if i + 4 > len(wire) or len(fields) == _SSH_MAX_FIELDS:
            return None
        n = int.from_bytes(wire[i : i + 4], "big")
        i += 4
        if i + n > len(wire):
            return None
        fields.append(wire[i : i + n])
        i += n
    return fields[0] if len(fields) >= 2 and _SSH_TYPE.fullmatch(fields[0]) else None


def ssh_public_key_spans(buf: bytes) -> list[tuple[int, int]]:
    """The spans of ``buf`` that are OpenSSH public keys (``ssh_key_type``), each with the type
    written before its body (``ssh-ed25519 AAAA...``) when it is there."""
    if b"AAAA" not in buf:
        return []
    spans = []
    for m in _SSH_BLOB.finditer(buf):
        kind = ssh_key_type(m.group())
        if kind is not None:
            start = m.start()
            named = start - len(kind) - 1
            if named >= 0 and buf[named:start] == kind + b" ":
                start = named
            spans.append((start, m.end()))
    return spans


_VALUE_STOPS = b" \t\r\n\"'`\\=,;()[]|"
"""What ends the value a candidate sits in (a blank, a quote, an escape, an assignment, a list)."""
_TOKEN_STOPS = b" \t\r\n\"'`\\"
"""What ends the run of text an envelope or a reference is written in (a blank, a quote, an escape)."""
_REACH = 1024
"""How far a value or a run of text is followed around a candidate."""


def _stop_table(stops: bytes) -> bytes:
    return bytes(0 if c in stops else 1 for c in range(256))


_VALUE_TABLE = _stop_table(_VALUE_STOPS)
_TOKEN_TABLE = _stop_table(_TOKEN_STOPS)


_NEAR = 96
"""Most values end this close to their candidate: looked at first, before the whole ``_REACH``."""


def _around(buf: bytes, s: int, e: int, table: bytes) -> tuple[int, int]:
    """``[s, e)`` grown both ways up to the nearest stop of ``table`` (``_stop_table``): byte
    translation and one search each way, not a loop over bytes."""
    lo = max(0, s - _NEAR)
    cut = buf[lo:s].translate(table).rfind(0)
    if cut < 0 and lo > 0:
        lo = max(0, s - _REACH)
        cut = buf[lo:s].translate(table).rfind(0)
    a = lo + cut + 1 if cut >= 0 else lo
    after = buf[e : e + _NEAR].translate(table).find(0)
    if after < 0 and e + _NEAR < len(buf):
        after = buf[e : e + _REACH].translate(table).find(0)
    b = e + after if after >= 0 else min(len(buf), e + _REACH)
    return a, b


def value_around(buf: bytes, s: int, e: int) -> tuple[int, int]:
    """The bounds of the whole value the candidate ``[s, e)`` is part of (``sk-or-v1-`` of
    ``sk-or-v1-<your-key>``): the candidate itself when a stop touches it."""
    return _around(buf, s, e, _VALUE_TABLE)


def _within(buf: bytes, s: int, e: int, ta: int, tb: int) -> tuple[int, int]:
    """``value_around`` inside the run of text ``[ta, tb)`` already found around the candidate."""
    cut = buf[ta:s].translate(_VALUE_TABLE).rfind(0)
    after = buf[e:tb].translate(_VALUE_TABLE).find(0)
    return (ta + cut + 1 if cut >= 0 else ta), (e + after if after >= 0 else tb)


MAX_SAMPLE = 512
"""A sample is written by hand: longer values (a key's body, a blob) are not looked at as one."""


def _sample(value: bytes) -> bool:
    return len(value) <= MAX_SAMPLE and (
        is_placeholder_value(value)
        or is_documented_example(value)
        or prefixed_sample(value)
        or sample_jwt(value)
    )


class Lookalikes:
    """Why a span a rule would redact is a look-alike and is kept (``reason``), for the candidates of
    one text. The one check every finding passes before it is redacted, whatever rule made it: a
    documented or masked sample (by how samples are written: placeholder words, templates, masks,
    counting or repeated filler, a sample JWT's claims), ciphertext at rest (by its envelope,
    ``envelopes``), or a secret store's reference or a template's expression. Words near the value
    do not count: only the value, its envelope and the mapping it sits in."""

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.marks = envelopes.Marks(buf)
        self._by_run: dict[tuple[bytes, int, int], tuple[Reason | None, int, int]] = {}
        """What the run of text alone says, by run and place in it: transcripts repeat values
        (a tool result is stored twice), and the run decides most of it."""

    def reason(self, s: int, e: int) -> Reason | None:
        buf = self.buf
        ta, tb = _around(buf, s, e, _TOKEN_TABLE)
        key = (buf[ta:tb], s - ta, e - ta)
        seen = self._by_run.get(key)
        if seen is None:
            seen = self._by_run[key] = _by_run(buf, s, e, ta, tb)
        reason, a, b = seen
        if reason is not None:
            return reason
        if envelopes.in_template(buf, s, e):
            return Reason.REFERENCE
        if envelopes.sealed_in_context(buf, self.marks, s, e, ta + a, ta + b):
            return Reason.CIPHERTEXT
        return None


def _by_run(buf: bytes, s: int, e: int, ta: int, tb: int) -> tuple[Reason | None, int, int]:
    """What the run of text ``[ta, tb)`` around the candidate says alone, and where the candidate's
    value is in it."""
    a, b = _within(buf, s, e, ta, tb) if (ta, tb) != (s, e) else (s, e)
    reason = None
    if _sample(buf[a:b]):  # the whole value: ``sk-or-v1-<your-key>``, not its prefix alone
        reason = Reason.PLACEHOLDER
    elif envelopes.store_reference(buf, s, e, ta, tb):
        reason = Reason.REFERENCE
    elif envelopes.sealed(buf, s, e, a, b, ta, tb):
        reason = Reason.CIPHERTEXT
    return reason, a - ta, b - ta

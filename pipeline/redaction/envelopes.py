"""Ciphertext at rest and secret-store references: look-alikes known by their envelope's structure.

A secret encrypted for storage travels in an envelope that says so: a header naming the cipher or
the tool and its version before an encoded body (SOPS ``ENC[AES256_GCM,data:...,iv:...,tag:...]``,
Jasypt ``ENC(...)``, Vault transit ``vault:v1:...``, ejson ``EJ[1:...]``, Spring's ``{cipher}...``,
dotenvx ``encrypted:...``, ``$ANSIBLE_VAULT;1.1;AES256``), a binary layout (an AWS KMS blob's
version bytes, a Google KMS blob's protobuf field, a Bitwarden cipher string ``2.iv|data|mac``, a JWE
in compact form with an ``enc`` in its header), an armour (``BEGIN AGE ENCRYPTED FILE``, ``BEGIN PGP
MESSAGE``, an Ansible Vault block), or a mapping whose name says its values are encrypted
(``encryptedData:`` of a sealed secret) or whose fields are an AEAD's parts (``encrypted_data`` with
``iv`` and ``auth_tag``). A reference says where a secret is kept (``op://``, ``sm://``, an ARN of a
secret, ``projects/p/secrets/s``, a key vault's URI) or how a template fills it in (``{{ .Values.x }}``).
None of them is the secret. Everything here reads ``bytes`` of the text around one candidate span.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from bisect import bisect_left

_B64 = rb"[A-Za-z0-9+/_-]"
_ENVELOPE = re.compile(
    # SOPS: ENC[AES256_GCM,data:...,iv:...,tag:...,type:str]
    rb"ENC\[[A-Z0-9_]{2,24},data:[^\]\s\"'\\]{0,8192}\]"
    # Jasypt, and any ENC(...) wrapper around an encoded body
    rb"|ENC\(" + _B64 + rb"{8,4096}={0,2}\)"
    # a header naming the tool or cipher and a version: vault:v1:..., EJ[1:...], {cipher}...
    rb"|(?i:vault|transit|kms|sops|sealed|age):v[0-9]{1,3}:" + _B64 + rb"{8,8192}={0,2}"
    rb"|EJ\[[0-9]:[A-Za-z0-9+/=:]{16,4096}\]"
    rb"|\{cipher\}[A-Za-z0-9+/=]{16,8192}"
    rb"|(?<![A-Za-z0-9_])(?i:encrypted|enc|ciphertext|sealed):" + _B64 + rb"{16,8192}={0,2}"
    # Ansible Vault's header line
    rb"|\$ANSIBLE_VAULT;[0-9]\.[0-9];[A-Z0-9_]{3,16}(?:;[A-Za-z0-9_-]{1,40})?"
    # a Bitwarden cipher string: type, IV, data and MAC in base64
    rb"|(?<![A-Za-z0-9.])[0-6]\.[A-Za-z0-9+/]{16,}={0,2}\|[A-Za-z0-9+/]{16,}={0,2}(?:\|[A-Za-z0-9+/]{16,}={0,2})?"
)
"""Envelopes written inline; a candidate inside one is ciphertext."""
MAX_ENVELOPE = 8400

_ARMOUR = re.compile(rb"-----BEGIN (?:AGE ENCRYPTED FILE|PGP MESSAGE|ENCRYPTED MESSAGE)-----")
_ARMOUR_END = re.compile(rb"-----END (?:AGE ENCRYPTED FILE|PGP MESSAGE|ENCRYPTED MESSAGE)-----")
_ARMOUR_REACH = 16384
"""How far an armour is taken to run when its END line is not in the text."""

STORE_SCHEMES = (
    b"op|sm|gsm|gcpsm|awssm|vault|doppler|infisical|akv|azkv|keyvault|secretsmanager|ssm|bw|bws|bitwarden|keeper"
    b"|lastpass|conjur|passbolt|secret|secrets|sops|kms|awskms|gcpkms|gopass|keychain|keyring|onepassword|1password"
)
"""The schemes of secret stores (a regex alternation): ``<scheme>://...`` or ``<scheme>:<path>`` says where
a secret is kept, not what it is. ``filters.is_reference`` reads the same list."""

_STORE_REFERENCE = re.compile(
    # a secret store's scheme, with no userinfo after it
    rb"(?<![A-Za-z0-9])(?i:" + STORE_SCHEMES + rb")://(?![^/\s\"'`\\]*@)[^\s\"'`\\]{1,400}"
    # scheme:path (ssm:/prod/db/password, vault:secret/data/db#pw)
    rb"|(?<![A-Za-z0-9])(?i:" + STORE_SCHEMES + rb"):/?[A-Za-z0-9_.-]+[/#][A-Za-z0-9_./#:@-]*"
    # the resource name of a secret, a parameter or a key in a cloud's secret store
    rb"|arn:aws[a-z-]*:(?:secretsmanager|ssm|kms):[a-z0-9-]*:[0-9]{12}:[A-Za-z0-9_./:@+=,!#-]{1,400}"
    rb"|(?<![A-Za-z0-9])projects/[A-Za-z0-9_.-]+/(?:locations/[a-z0-9-]+/)?secrets/[A-Za-z0-9_-]+"
    rb"(?:/versions/[A-Za-z0-9_-]+)?"
    rb"|https://[A-Za-z0-9-]+\.vault\.(?:azure\.net|usgovcloudapi\.net|azure\.cn)/(?:secrets|keys|certificates)"
    rb"/[A-Za-z0-9/_-]{1,300}"
    rb"|@Microsoft\.KeyVault\([^()\s]{1,500}\)"
    rb"|\{\{resolve:(?:ssm|ssm-secure|secretsmanager):[^{}\s]{1,400}\}\}"
)
"""Where a secret is kept, by the scheme or resource name of its store."""

_TEMPLATE = re.compile(
    rb"\$?\{\{[^{}\n\\]{1,300}\}\}|<%=?[^%\n\\]{1,300}%>|\{%[^%\n\\]{1,300}%\}|<<[ \t]*[A-Za-z_][\w.-]{0,120}[ \t]*>>"
)
"""A template expression (Helm, Jinja, Actions, ERB, CircleCI): a candidate inside one is an
expression, unless it is a quoted literal there."""

_KMS_MIN = 60
"""A KMS ciphertext blob holds a key id and an encrypted data key: never shorter than this."""

_LINE_BREAK = re.compile(rb"\r?\n|(?:\\+r)?\\+n")
"""A line break as text has it, raw or JSON-escaped (a tool result is one JSONL line)."""
_GUTTER = re.compile(rb"[ \t]*[0-9]{1,6}(?:\t|\\+t|\xe2\x86\x92|[ ]*[|:\xe2\x94\x82])")
"""A line number a reader or editor puts before each line (``  56\\t``, ``  47→``, ``12│``)."""
_KEY_LINE = re.compile(rb"([ \t]*)(?:-[ \t]+)?\\*[\"']?([A-Za-z_][A-Za-z0-9_.-]{0,63})\\*[\"']?[ \t]*[:=]")
_ENCRYPTED_NAME = re.compile(
    rb"(?i)[a-z0-9_.-]*?(?<!un)(?:encrypted|sealed|ciphertexts?|cipher[_-]?text)[a-z0-9_.-]*"
)
"""A mapping or field whose name says its content is encrypted (``encryptedData``, ``sealed_values``);
``encryption`` (a setting, or the key itself) does not count."""
_ENVELOPE_FIELD = re.compile(
    rb"(?i)(?:encrypted[_-]?(?:data|value|key|blob)?|cipher[_-]?text|ct|iv|nonce|(?:auth[_-]?)?tag|mac|hmac"
    rb"|salt|version|cipher|alg|enc|kid)"
)
_CIPHERTEXT_FIELD = re.compile(rb"(?i)encrypted[_-]?(?:data|value|blob)?|cipher[_-]?text|ct")
_IV_FIELD = re.compile(rb"(?i)iv|nonce")
_CONTEXT = 1024
"""How far around a candidate the mapping it sits in is read."""
_MAX_LINES = 16
_BLOB = re.compile(rb"[A-Za-z0-9+/_-]{16,}={0,2}")
"""Encoded bytes (base64 of any alphabet, hex): what ciphertext is written as."""
_BEARER_WORDS = (b"bearer", b"authorization", b"cookie", b"session", b"token")


_ENVELOPE_MARK = re.compile(rb"[\[(:|};]")
"""Every envelope ``_ENVELOPE`` knows has one of these: looked for before the pattern is tried."""


def in_envelope(buf: bytes, s: int, e: int, lo: int, hi: int) -> bool:
    """Does an inline envelope within ``buf[lo:hi]`` (the candidate's run of text) cover ``[s, e)``?"""
    if _ENVELOPE_MARK.search(buf, lo, hi) is None:
        return False
    for m in _ENVELOPE.finditer(buf, max(lo, s - MAX_ENVELOPE), hi):
        if m.start() > s:
            return False
        if m.end() >= e:
            return True
    return False


def store_reference(buf: bytes, s: int, e: int, lo: int, hi: int) -> bool:
    """Does a secret store's reference within ``buf[lo:hi]`` cover ``[s, e)``?"""
    if buf.find(b":", lo, hi) < 0 and buf.find(b"projects/", lo, hi) < 0:
        return False
    for m in _STORE_REFERENCE.finditer(buf, lo, hi):
        if m.start() > s:
            return False
        if m.end() >= e:
            return True
    return False


_TEMPLATE_OPENERS = (b"{{", b"<%", b"{%", b"<<")
_TEMPLATE_REACH = 320


def in_template(buf: bytes, s: int, e: int) -> bool:
    """Is ``[s, e)`` inside a template expression on its line (opened by the last ``{`` or ``<``
    before it), not a quoted literal there?"""
    lo = max(0, s - _TEMPLATE_REACH)
    for p in (buf.rfind(b"{", lo, s), buf.rfind(b"<", lo, s)):
        if p < 0:
            continue
        if buf[p - 1 : p + 1] in _TEMPLATE_OPENERS:
            start = p - 1
        elif buf[p : p + 2] in _TEMPLATE_OPENERS:
            start = p
        else:
            continue
        if buf[s - 1 : s] in (b'"', b"'") or buf[e : e + 1] in (b'"', b"'"):
            return False
        if start and buf[start - 1] == 36:  # ``${{``
            start -= 1
        m = _TEMPLATE.match(buf, start, min(len(buf), e + _TEMPLATE_REACH))
        if m is not None and m.end() >= e:
            return True
    return False


def _b64decode(text: bytes) -> bytes | None:
    text = text.rstrip(b"=")
    try:
        return base64.b64decode(
            text + b"=" * (-len(text) % 4), altchars=b"-_" if b"-" in text or b"_" in text else None
        )
    except (binascii.Error, ValueError):
        return None


def kms_blob(value: bytes) -> bool:
    """An AWS KMS ciphertext blob (version bytes ``01 0x 0x 00``: ``AQICAH...``) or a Google Cloud KMS one
    (protobuf field 1 of 36 bytes: ``CiQA...``), whole."""
    if len(value) < _KMS_MIN or not (value.startswith(b"AQ") or value.startswith(b"CiQA")):
        return False
    if _BLOB.fullmatch(value) is None:
        return False
    head = _b64decode(value[:8])
    if head is None or len(head) < 4:
        return False
    if head[:3] == b"\x0a\x24\x00":
        return True
    return head[0] == 1 and head[1] in (1, 2) and head[2] in (1, 2, 3) and head[3] == 0


def _json_header(part: bytes) -> dict[str, object] | None:
    raw = _b64decode(part)
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except (UnicodeDecodeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def jwe(value: bytes) -> bool:
    """A JWE in compact form: five parts, the first a header naming its content cipher (``enc``)."""
    if not value.startswith(b"eyJ") or value.count(b".") != 4:
        return False
    header = _json_header(value.split(b".", 1)[0])
    return header is not None and "enc" in header


def _bearer_context(buf: bytes, start: int) -> bool:
    """Is the value at ``start`` presented as a credential (a header, a cookie, a token's field)?"""
    line = buf.rfind(b"\n", max(0, start - 96), start) + 1
    before = buf[max(line, start - 96) : start].lower()
    return any(w in before for w in _BEARER_WORDS)


def _line_bounds(buf: bytes, pos: int, lo: int, hi: int) -> list[tuple[int, int]]:
    """The lines of ``buf[lo:hi]`` as spans, raw or JSON-escaped line breaks alike."""
    spans = []
    start = lo
    for m in _LINE_BREAK.finditer(buf, lo, hi):
        spans.append((start, m.start()))
        start = m.end()
    spans.append((start, hi))
    return spans


def _key_of(buf: bytes, a: int, b: int) -> tuple[int, bytes] | None:
    """The indentation and name of the key a line opens with (past a line-number gutter)."""
    g = _GUTTER.match(buf, a, b)
    m = _KEY_LINE.match(buf, g.end() if g else a, b)
    if m is None:
        return None
    indent = m.group(1).replace(b"\t", b"    ")
    return len(indent), m.group(2)


def _indent_of(buf: bytes, a: int, b: int) -> int | None:
    g = _GUTTER.match(buf, a, b)
    i = g.end() if g else a
    j = i
    while j < b and buf[j] in (32, 9):
        j += 1
    if j == b:
        return None  # a blank line
    return j - i


def encrypted_mapping(buf: bytes, s: int) -> bool:
    """Does the value at ``s`` sit in a mapping whose own name says encrypted (a sealed secret's
    ``encryptedData:``), or in an AEAD envelope (fields ``encrypted_data``/``ciphertext`` and
    ``iv``/``nonce``) as one of its parts? Its own field's name must be one the envelope has; a
    ``key`` or ``password`` beside them is judged as any other."""
    lo, hi = max(0, s - _CONTEXT), min(len(buf), s + _CONTEXT // 2)
    lines = _line_bounds(buf, s, lo, hi)
    here = next((i for i, (a, b) in enumerate(lines) if a <= s <= b), None)
    if here is None or (here == 0 and lo > 0):  # the first line of a window may be cut
        return False
    own = _key_of(buf, lines[here][0], s)
    if own is None:
        return False
    indent, name = own
    if _ENCRYPTED_NAME.fullmatch(name):
        return True
    # the mapping above: the nearest line indented less
    first = 1 if lo > 0 else 0
    for a, b in reversed(lines[max(first, here - _MAX_LINES) : here]):
        level = _indent_of(buf, a, b)
        if level is None or level >= indent:
            continue
        parent = _key_of(buf, a, b)
        if parent is not None and _ENCRYPTED_NAME.fullmatch(parent[1]) and _opens_block(buf, a, b):
            return True
        break
    if not _ENVELOPE_FIELD.fullmatch(name):
        return False
    siblings = []
    for a, b in lines[max(first, here - _MAX_LINES) : here + _MAX_LINES]:
        key = _key_of(buf, a, b)
        if key is not None and key[0] == indent:
            siblings.append(key[1])
    return any(_CIPHERTEXT_FIELD.fullmatch(k) for k in siblings) and any(
        _IV_FIELD.fullmatch(k) for k in siblings
    )


def _opens_block(buf: bytes, a: int, b: int) -> bool:
    """Does the key line ``buf[a:b]`` open a block (nothing after its ``:`` but ``{``, ``|`` or ``>``)?"""
    line = buf[a:b].rstrip()
    tail = line[line.find(b":") + 1 :].strip(b" \t\\\"'")
    return tail in (b"", b"{", b"|", b">", b"|-", b">-")


def in_armour(marks: Marks, s: int) -> bool:
    """Is ``s`` inside an armoured ciphertext (age, PGP message, Ansible Vault block)?"""
    i = bisect_left(marks.blocks, (s + 1,))
    return i > 0 and marks.blocks[i - 1][1] > s


_VAULT_HEADER = b"$ANSIBLE_VAULT;"
_VAULT_BODY = re.compile(rb"[0-9]\.[0-9];[A-Za-z0-9_;.-]*+(?:[0-9a-f \t\r\n|]++|\\++[nrt])*+")
"""The rest of an Ansible Vault header line, then hex lines (raw or JSON-escaped breaks)."""


class Marks:
    """The spans of one text's armoured ciphertexts (``BEGIN AGE ENCRYPTED FILE`` to its ``END``, an
    Ansible Vault header through its hex lines), found once for all its candidates."""

    def __init__(self, buf: bytes) -> None:
        self.blocks = _blocks(buf)


_NAMES_BEFORE = 320
_NAMES_AFTER = 160
"""Where an encrypted mapping's names are looked for around a candidate before its lines are read:
its own key, its parent's, its siblings'."""


def _names_near(buf: bytes, s: int) -> bool:
    """Is one of ``encrypted``, ``cipher``, ``sealed`` (any case) near ``s``?"""
    near = buf[max(0, s - _NAMES_BEFORE) : s + _NAMES_AFTER].lower()
    return b"encrypted" in near or b"cipher" in near or b"sealed" in near


def _blocks(buf: bytes) -> list[tuple[int, int]]:
    """The spans of the armoured ciphertexts in ``buf``, sorted: ``BEGIN`` to ``END`` (or a reach when
    the end is cut off), an Ansible Vault header through its hex lines."""
    blocks: list[tuple[int, int]] = []
    at = buf.find(b"-----BEGIN ")
    while at >= 0:
        m = _ARMOUR.match(buf, at)
        if m is not None:
            close = _ARMOUR_END.search(buf, m.end(), m.end() + _ARMOUR_REACH)
            blocks.append((at, close.end() if close else min(len(buf), m.end() + _ARMOUR_REACH)))
        at = buf.find(b"-----BEGIN ", at + 11)
    at = buf.find(_VAULT_HEADER)
    while at >= 0:
        body = _VAULT_BODY.match(buf, at + len(_VAULT_HEADER))
        end = body.end() if body else at + len(_VAULT_HEADER)
        blocks.append((at, end))
        at = buf.find(_VAULT_HEADER, end)
    return sorted(blocks)


def sealed(buf: bytes, s: int, e: int, lo: int, hi: int, ta: int, tb: int) -> bool:
    """Is the candidate ``[s, e)``, whose value spans ``[lo, hi)`` in a run of text ``[ta, tb)``,
    ciphertext by what that run holds alone: an inline envelope around it, or a KMS blob?"""
    if in_envelope(buf, s, e, ta, tb):
        return True
    head = buf[lo : lo + 4]
    return (head[:2] == b"AQ" or head == b"CiQA") and kms_blob(buf[lo:hi])


def sealed_in_context(buf: bytes, marks: Marks, s: int, e: int, lo: int, hi: int) -> bool:
    """Is the candidate ciphertext by where it stands: a JWE not presented as a credential, a line of
    an armour, a value in a mapping of ciphertext?"""
    if buf[lo : lo + 3] == b"eyJ" and jwe(buf[lo:hi]) and not _bearer_context(buf, lo):
        return True
    if marks.blocks and in_armour(marks, s):
        return True
    if _BLOB.search(buf, s, e) is None:
        return False
    if hi - lo >= LONG_CIPHERTEXT and _BLOB.fullmatch(buf, lo, hi):
        # a sealed secret's values: siblings as long push the parent far up
        return _parent_says_encrypted(buf, lo)
    return _names_near(buf, s) and encrypted_mapping(buf, lo)


def _line_start(buf: bytes, pos: int) -> int:
    """Where the line holding ``pos`` starts (after a raw or JSON-escaped break); -1 when its start
    is further back than ``_LINE_REACH``."""
    reach = max(0, pos - _LINE_REACH)
    raw, escaped = buf.rfind(b"\n", reach, pos), buf.rfind(b"\\n", reach, pos)
    if raw < 0 and escaped < 0:
        return 0 if reach == 0 else -1
    return max(raw + 1, escaped + 2)


def _end_before(buf: bytes, start: int) -> int:
    """The end of the line before the one starting at ``start`` (-1 at the text's first line)."""
    if start >= 1 and buf[start - 1] == 10:
        end = start - 1
        return end - 1 if end and buf[end - 1] == 13 else end
    if start >= 2 and buf[start - 2 : start] == b"\\n":
        end = start - 2
        while end > 0 and buf[end - 1] == 92:  # deeper escaping doubles the backslash
            end -= 1
        return end
    return -1


def _parent_says_encrypted(buf: bytes, lo: int) -> bool:
    """Is the value at ``lo`` an indented key's, under a mapping whose name says encrypted
    (``encryptedData:``)? Lines are walked up one by one, however long its siblings are."""
    start = _line_start(buf, lo)
    own = _key_of(buf, start, lo) if start >= 0 else None
    if own is None or own[0] == 0:
        return False
    for _ in range(_MAX_LINES):
        end = _end_before(buf, start)
        if end < 0:
            return False
        start = _line_start(buf, end)
        if start < 0:
            return False
        level = _indent_of(buf, start, end)
        if level is not None and level < own[0]:
            parent = _key_of(buf, start, end)
            return (
                parent is not None
                and _ENCRYPTED_NAME.fullmatch(parent[1]) is not None
                and _opens_block(buf, start, end)
            )
    return False


_LINE_REACH = 4096
"""The longest line walked over (a sealed value is under a thousand characters)."""
LONG_CIPHERTEXT = 256
"""A value this long in one run is a blob (an RSA-sealed value is 344 characters at least): its
parent mapping is read whatever words are near (``_parent_says_encrypted``)."""

"""Generic secret assignments: a secret-looking name, an assignment, a value.

Covers env files and dumps (``DB_PASSWORD=...``), shell (``export``, ``$env:``), JSON (also
escaped once or twice: ``\\"api_key\\": \\"...\\"``), YAML, TOML/INI, properties, XML
(``<password>...</password>``, ``key="..." value="..."``), Kubernetes ``name:``/``value:`` pairs,
and code (``password="..."``, ``apiKey: '...'``, ``"token" => "..."``).

The name decides how much the value must prove (see ``filters.Level``); names that only talk
about secrets (``token_type``, ``SECRET_NAME``, ``max_tokens``, ``page_token``) are skipped.
Candidates carry their ``Level`` as priority (below ``GENERIC``): the engine checks the value only
when no provider rule already covers it, which saves most of the work in secret-dense text.
"""

from __future__ import annotations

import re
from functools import lru_cache

from pipeline.redaction.filters import Level
from pipeline.redaction.model import Candidate, ScanRule
from pipeline.redaction.values import MAX_QUOTED, UNQUOTED, quoted_pattern
from pipeline.redaction.wrap import yaml_block

ANCHORS = (
    b"pass",
    b"pwd",
    b"_pw",
    b".pw",
    b"-pw",
    b"pword",
    b"pswd",
    b"psswd",
    b"secret",
    b"key",
    b"auth",
    b"cred",
    b"mnemonic",
    b"phrase",
    b"_pat",
    b"psk",
    b"seed",
    b"_sk",
    b"_ak",
)

_IDCHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
_ID_MASK = bytes(97 if c in _IDCHARS else 32 for c in range(256))  # identifier chars -> "a", others -> " "
_ASSIGN = re.compile(
    rb"[A-Za-z0-9_.-]{0,80}+(?P<end>)(?P<kq>\\*[\"'`]\]?)?[ \t]*"
    rb"(?P<op>[ \t]+value[ \t]*=|(?:\r?\n|\\+[rn])[ \t]*(?:(?:\xe2\x94\x82|>)[ \t]*)?[ \t-]*value[ \t]*:(?=[ \t])|,[ \t]*\\*[\"'](?:[A-Za-z]*(?i:value))\\*[\"'][ \t]*:"
    rb"|:=|=>|\?=|=(?!=)|:(?=[ \t]|\\*[\"'`])|,(?=[ \t]*\\*[\"'])|>|(?<=[ \t])\|(?=[ \t]+[^\s|])"
    rb"|:(?=[A-Za-z0-9+/_-]{8})|\((?=\\*[\"']))"
    rb"[ \t]*(?:[NEBUnebu](?=\\*[\"']))?(?P<vq>\\*[\"'`])?(?=[^\s])"
)
MAX_UNQUOTED = 1024
# An unquoted value ends before ``;``/``,``/``&`` that start the next ``name=`` (query strings,
# ADO.NET connection strings, flow mappings) and before closing brackets or a ``<`` tag at its end.
_NEXT_PAIR = re.compile(rb"[;,&<](?:(?<=<)|[ \t]*[A-Za-z_][\w. -]{0,40}=)")  # one class first: a fast search
_TRAILING = b",;)}]"
_BLOCK_START = b"|>"
_BRACED = re.compile(rb"\{(?P<v>[^{}$\s\\](?:[^}\r\n\\]|\}\}){0,255})\}(?=[;\s\"'\\]|$)")
_STRING_LIST = re.compile(
    rb"\[(?:\s|\\+[nrt])*(?P<q>\\*[\"'])(?P<v>[^\"'\\\r\n]{1,256}(?:(?P=q)(?:\s|\\+[nrt])*,(?:\s|\\+[nrt])*(?P=q)"
    rb"[^\"'\\\r\n]{1,256}){1,31})(?P=q)(?:\s|\\+[nrt])*,?(?:\s|\\+[nrt])*\]"
)
"""A list of two or more strings (over lines too, a trailing comma allowed); its span is from the
first string's text to the last's."""
_PAREN_STRINGS = re.compile(
    rb"\((?:\s|\\+[nrt])*(?P<q>\\*[\"'])(?P<v>[^\"'\\\r\n]{1,256}(?:(?P=q)(?:\s|\\+[nrt])+(?P=q)"
    rb"[^\"'\\\r\n]{1,256}){1,31})(?P=q)(?:\s|\\+[nrt])*\)"
)
"""Adjacent string literals in parentheses, which Python joins (``token = (\n "ab"\n "cd"\n)``)."""
_CONCAT_CALL = re.compile(
    rb"concat!?\((?:\s|\\+[nrt])*(?P<q>\\*[\"'])(?P<v>[^\"'\\\r\n]{1,256}(?:(?P=q)(?:\s|\\+[nrt])*,(?:\s|\\+[nrt])*(?P=q)"
    rb"[^\"'\\\r\n]{1,256}){1,31})(?P=q)(?:\s|\\+[nrt])*,?(?:\s|\\+[nrt])*\)"
)
"""Strings joined by a call (Rust's ``concat!("ab", "cd")``, SQL's ``concat('ab', 'cd')``), over lines too."""
_NAME = re.compile(rb"[A-Za-z_][A-Za-z0-9_.-]*")
_ENV_NAME = re.compile(rb"[A-Z][A-Z0-9_]*")
"""An upper-case name: in an env file, a shell or YAML its unquoted value is a string, not code."""
_CALL = re.compile(rb"[A-Za-z_$][\w.$]*[(\[]")
_SEG = re.compile(rb"[A-Z]?[a-z0-9]+|[A-Z0-9]+(?![a-z])")
_ASSIGN_MATCH = _ASSIGN.match
_SETTERS = (b"set", b"with", b"put", b"use")
_BLANK_OR_QUOTE = (b" ", b"\t", b'"', b"'", b"`", b"\\")
_NAME_FULLMATCH = _NAME.fullmatch
_PASSWORD = int(Level.PASSWORD)  # plain ints: an enum member costs an attribute lookup per use
_LITERAL_PASSWORD = int(Level.LITERAL_PASSWORD)
_QUOTED_BY_OPENER: dict[bytes, re.Pattern[bytes]] = {}
"""``quoted_pattern`` by the opener as matched (a quote and the backslashes before it)."""
_CACHED_OPENER = 8  # a quote escaped up to three times; longer runs of backslashes are not kept


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_PASSWORD_SEGS = (
    "password",
    "passwd",
    "passphrase",
    "passwort",
    "pwd",
    "pass",
    "passcode",
    "pword",
    "passwords",
    "pswd",
    "psswd",
)
_KEY_QUALIFIERS = _words(
    """api secret private access auth master signing encryption enc client app admin service account
    storage write read ingest license deploy hmac jwt session cookie shared sas webhook subscription
    consumer server x rest live prod bot user personal integration management root mgmt project org sdk
    developer dev"""
)
_KEY_TAILS = _words(
    """base value prod production live test dev staging secret data b64 base64 pem hex raw str string v1 v2
    old new chunks chunk parts part pieces segments private priv sec bytes half pt p"""
)
_DENY_ANY = _words(
    """public publishable pub pubkey page next continuation cursor sync csrf xsrf max min num tokenizer
    tokenize tokenized keyboard keypress keydown keyup keycode keyword keywords keystroke primary
    foreign sort partition cache idempotency dedup lookup hotkey shortcut monkey turkey author authors
    authority authorization authenticated authentication authenticate authorize authorized bypass
    compass passthrough passed passes passing passenger hash hashed digest length count expires expiry"""
)
"""Names that talk about a secret without holding one. Not ``example``, ``sample``, ``fake`` or ``mock``:
a name saying so proves nothing about its value (``EXAMPLE_API_KEY=`` may hold a live key), which is
judged by its own shape (``filters.Lookalikes`` keeps a sample by how samples are written)."""
_DENY_LAST = _words(
    """id ids name names type types path paths file files dir url uri urls endpoint host hostname env var
    vars arn version length len size count limit ttl expiry expires expiration timeout header headers
    field fields prefix suffix format kind algorithm alg algo policy region ref refs label hint mode
    scope scopes usage method provider source store manager backend enabled disabled required index
    location hash digest fingerprint pattern regex template schema class handler fn func callback
    validator description help prompt text message msg error column param params arg args option options
    created updated at date time timestamp period interval seconds ms minutes hours days bits bytes
    chars encoding parser generator cache rotation strength policy reset hint input output set check
    checker"""
)


_PLAIN_SEEDS = _words("random rng shuffle np numpy torch faker data db test sample split init global fixed")
"""What a ``seed`` is after these words: a random generator's starting number, not a key's seed."""


@lru_cache(maxsize=4096)
def classify(identifier: bytes) -> Level | None:
    """How strongly a name says its value is a secret; ``None`` when it does not (or only talks about one)."""
    segs = [s.decode().lower() for s in _SEG.findall(identifier)]
    if not segs or any(s in _DENY_ANY for s in segs):
        return None
    if segs[-3:] == ["access", "key", "id"] or segs[-2:] in (["secret", "id"], ["accesskey", "id"]):
        return Level.KEY  # a cloud key's id (AccessKeyId, SecretId): a credential's half, if random
    if segs[-1] in _DENY_LAST:
        return None
    level: Level | None = None
    for i, s in enumerate(segs):
        password = s.endswith(_PASSWORD_SEGS) and not s.endswith(("bypass", "compass"))
        if password and (s not in ("pass", "pwd") or i == len(segs) - 1):  # not pass_context, pwd_hash
            return Level.PASSWORD
        if (
            s == "pw" and i == len(segs) - 1 and i > 0
        ):  # admin_pw, app.db.pw (a bare "pw" is too short a name)
            return Level.PASSWORD
        if (
            "secret" in s
            or s == "mnemonic"
            or (s == "phrase" and i > 0 and segs[i - 1] in ("seed", "recovery", "secret"))
            or s.endswith("token")
            or (s in ("pat", "psk", "sk") and i == len(segs) - 1 and (s != "sk" or i > 0))
            # a personal access token, a pre-shared key, a secret key (HUAWEICLOUD_SDK_SK)
            or s in ("credential", "credentials", "creds", "cred")
            or s == "auth"
            or (s.endswith("auth") and len(s) > 4)
        ):
            level = Level.SECRET
        elif (
            s == "seed"
            and all(t in _KEY_TAILS for t in segs[i + 1 :])
            and not (i and segs[i - 1] in _PLAIN_SEEDS)
        ):
            level = max(level or Level.SECRET, Level.SECRET)  # totp_seed, signingSeed: a key's seed
        elif (s in ("session", "sess", "sessionid", "sid") or (s == "ak" and i > 0)) and i == len(segs) - 1:
            level = max(level or Level.KEY, Level.KEY)  # a session's value, an access key: if random
        elif s.endswith("key") and all(t.rstrip("0123456789") in _KEY_TAILS for t in segs[i + 1 :]):
            qualifier = s[:-3] if len(s) > 3 else (segs[i - 1] if i else "")
            strong = qualifier in _KEY_QUALIFIERS or qualifier.endswith(
                ("api", "secret", "private", "access")
            )
            level = max(level or Level.KEY, Level.SECRET if strong else Level.KEY)
    return level


@lru_cache(maxsize=4096)
def _classify_named(identifier: bytes) -> tuple[int, str] | None:
    """(level, rule name) for a name, or ``None``; cached, names repeat a lot."""
    level = classify(identifier)
    if level is None:
        return None
    if level is Level.PASSWORD:
        return int(level), "password"
    low = identifier.lower()
    return int(level), "aws-secret-access-key" if b"aws" in low and b"secret" in low else "secret-assignment"


def _value_span(
    buf: bytes, s: int, vq: bytes | None, op: bytes, ident_start: int
) -> tuple[int, int, bool] | None:
    """Where the value starting at ``s`` is: quoted, ODBC-braced, a YAML block or one word, and
    whether it is written as a literal (quoted or braced); ``None`` when it is code (a call, an
    index) rather than a value."""
    if vq is not None:
        quoted = quoted_pattern(vq[-1], len(vq) - 1).match(buf, s, s + MAX_QUOTED + 8)
        if quoted is not None:
            return s, quoted.end(), True
    if buf[s] == 91 and (listed := _STRING_LIST.match(buf, s)) is not None:  # [
        return (*listed.span("v"), True)  # a value split into a JSON array: "token": ["ab", "cd"]
    if buf[s] == 99 and (joined := _CONCAT_CALL.match(buf, s)) is not None:  # concat!("ab", "cd")
        return (*joined.span("v"), True)
    if buf[s] == 40 and (joined := _PAREN_STRINGS.match(buf, s)) is not None:  # (
        return (*joined.span("v"), True)
    if buf[s] == 123 and (braced := _BRACED.match(buf, s)) is not None:  # {
        return (*braced.span("v"), True)  # ODBC: PWD={p@ss;word}
    # unquoted, or a quote not closed on its line: the value is one word
    word = UNQUOTED.match(buf, s, s + MAX_UNQUOTED)
    e = s if word is None else word.end()
    cut = _NEXT_PAIR.search(buf, s, e)
    if cut is not None:
        e = cut.start()
    while e > s and buf[e - 1] in _TRAILING:
        e -= 1
    if (buf.find(b"(", s, e + 1) >= 0 or buf.find(b"[", s, e + 1) >= 0) and _CALL.match(buf, s, e + 1):
        # a call or an index: code, not a value
        return None
    if e - s <= 2 and buf[s] in _BLOCK_START:
        block = yaml_block(buf, ident_start, buf[s:e], e)
        if block is not None:
            return (*block, True)
    if op == b">" and buf[e : e + 2] != b"</":
        return None
    return s, e, op == b">"  # <password>hunter2</password> is text


def _without_operator(buf: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """A secret's name with no assignment after it: a labelled block (HCL), a flag, a table's
    header cell, or a snake-case name and its value after a blank."""
    block = _BLOCK_OPEN.match(buf, end) if buf.find(b"{", end, end + 64) >= 0 else None
    if block is not None:
        return _scan_block(buf, start, block, out)
    found = _scan_flag(buf, start, end, out)
    if found:
        return found
    name_end = _FLAG_NAME_END.match(buf, end).end()  # type: ignore[union-attr]  # {0,} always matches
    after = buf[name_end : name_end + 2]
    if after[:1] in _TABLE_NEXT or after in _TABLE_NEXT_BLANK:
        return _scan_table(buf, start, end, out)
    if after[:1] not in _BLANKS:
        return 0
    if buf[start - 1 : start] == b"_" or b"_" in buf[end:name_end]:
        found = _scan_spaced(buf, start, end, out)
        if found:
            return found
    return _scan_keyword_line(buf, start, end, out)


_GUTTER = rb"[ \t]*[0-9]{1,6}(?:\t|\\+t|\xe2\x86\x92|[ \t]*\xe2\x94\x82)"
_LINE_HEAD = re.compile(
    rb"(?:(?:\r?\n|\\+n|^)(?:" + _GUTTER + rb"|[+-](?![+-]))?|\\*\"" + _GUTTER + rb")[ \t]*\Z"
)
"""What may stand between a line's start and its keyword: blanks, a diff's mark, a line number
(a file's listing may open a JSON string)."""
_PLAIN_WORD = re.compile(rb"[A-Za-z][a-z]*")
"""A word alone ("Password changed"): a status line, not a value."""
_HEAD_BACK = 24
_KEYWORD_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_KEYWORD_VALUE = re.compile(
    rb"[A-Za-z0-9_.-]*[ \t]+(?P<q>\\*[\"']?)(?P<v>[^\s\"'\\]{3,256})(?P=q)[ \t]*(?=\r?\n|\\+[nr]|\\*\"|$)"
)


def _scan_keyword_line(buf: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """A configuration line of a keyword, blanks and one value (``Pass ...`` in a mail sync
    client's file, ``SmtpPassword ...``; as ssh_config, mbsync, msmtp and Apache write settings): the
    keyword opens its line (after indentation, a diff's mark or a line number) and the value is the
    rest of it, a literal password (a configuration file holds no variables)."""
    m = _KEYWORD_VALUE.match(buf, end)
    if m is None:
        return 0  # (most hits: the word in a sentence, a ``name=`` assignment)
    s = start
    while s > 0 and start - s < 64 and buf[s - 1] in _KEYWORD_CHARS:
        s -= 1
    if s and buf[s - 1] == 92 and buf[s] in b"nrt":
        s += 1  # a JSON-escaped line break or tab, not the name's first letter
    if _LINE_HEAD.search(buf, max(0, s - _HEAD_BACK), s) is None:
        return 0
    name = buf[s : m.start("q")].rstrip()
    level = classify(name)
    if level is Level.PASSWORD:
        level = Level.LITERAL_PASSWORD
    if level is not None and level >= Level.SECRET and _PLAIN_WORD.fullmatch(m.group("v")) is None:
        out.append((*m.span("v"), "password", int(level)))
    return m.end()


def _colon_chain(buf: bytes, ident_start: int, after_op: int) -> bool:
    """``Name:value`` with no blank is a value (Go's %+v), unless the colons chain (an ARN, a URN)
    or a path follows."""
    return buf[after_op : after_op + 1] not in _BLANK_OR_QUOTE and (
        buf[ident_start - 1 : ident_start] in (b":", b"/") or buf.find(b"/", after_op, after_op + 12) >= 0
    )


def _triple_quoted(buf: bytes, vq: bytes, s: int, named: tuple[int, str], out: list[Candidate]) -> int:
    """A \"\"\"...\"\"\" string (TOML, Python) opened at ``s``: its end, or 0 when it is none."""
    if vq[-1:] != b'"' or not buf.startswith(vq * 2, s):
        return 0
    opened = s + 2 * len(vq)
    close = buf.find(vq * 3, opened, opened + MAX_QUOTED)
    if close <= opened or buf.find(b"\n", opened, close) >= 0:
        return 0
    out.append((opened, close, named[1], _LITERAL_PASSWORD if named[0] == _PASSWORD else named[0]))
    return close + 3 * len(vq)


_CHECKED_OPS = frozenset((b">", b",", b":", b"("))


def _no_value_here(buf: bytes, m: re.Match[bytes], ident_start: int, identifier: bytes) -> bool:
    """Operators that assign only in some places: ``>`` closes an XML tag (``<password>...``);
    ``,`` follows a quoted name in a call (``("password", "value")``), not in a list; ``:`` with
    no blank is Go's %+v but not a chain of colons or a path; ``(`` is a setter's argument."""
    op, vq = m.group(3, 4)
    if op == b">":
        return buf[ident_start - 1 : ident_start] != b"<" or vq is not None
    if op == b",":
        return not (m.group(2) and buf[max(0, ident_start - 3) : ident_start - 1].strip()[-1:] == b"(")
    if op == b":":
        return _colon_chain(buf, ident_start, m.end(3))
    return not identifier.rpartition(b".")[2].lower().startswith(_SETTERS)


def scan_assignment(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    m = _ASSIGN_MATCH(buf, end)
    if m is None:
        return _without_operator(buf, start, end, out)
    ident_end = m.end(1)  # "end"
    lo = start - 80 if start > 80 else 0
    ident_start = lo + 1 + buf[lo:start].translate(_ID_MASK).rfind(b" ")
    if ident_start >= 2 and buf[ident_start - 1] == 92 and buf[ident_start] in b"nrt":  # \nNAME=
        ident_start += 1
    op, vq = m.group(3, 4)  # "op", "vq"
    identifier = buf[ident_start:ident_end]
    if op in _CHECKED_OPS and _no_value_here(buf, m, ident_start, identifier):
        return ident_end
    named = _classify_named(identifier)
    if named is None:
        return ident_end
    if vq is not None and (triple := _triple_quoted(buf, vq, m.end(), named, out)):
        return triple
    # _value_span, inline (this is the hottest path of the redactor)
    s = m.end()
    if vq is None:
        quoted = None
    else:
        pattern = _QUOTED_BY_OPENER.get(vq)
        if pattern is None:
            pattern = quoted_pattern(vq[-1], len(vq) - 1)
            if len(vq) <= _CACHED_OPENER:
                _QUOTED_BY_OPENER[vq] = pattern
        quoted = pattern.match(buf, s, s + MAX_QUOTED + 8)
    if quoted is not None:
        e, literal = quoted.end(), True
    else:
        span = _value_span(buf, s, None, op, ident_start)
        if span is None:
            return ident_end
        s, e, literal = span
    level = named[0]
    if level == _PASSWORD and (
        literal
        or (_ENV_NAME.fullmatch(identifier) and op in (b"=", b":"))
        or (op == b"=" and buf[ident_start - 1 : ident_start] == b";")  # ...;Password=...; a string
    ):
        level = _LITERAL_PASSWORD  # a string, however weak, not a variable holding one
    if s < e:
        out.append((s, e, named[1], level))  # checked later, unless a stronger rule covers it
    # A value without blanks is one token: names inside it (``a=a=a=...``) are not searched again,
    # which keeps the scan linear. A value with blanks may hold more assignments, and a bare name
    # may be the next key (``key="ClearTextPassword" value="..."``).
    if (
        buf.find(b" ", s, e) < 0
        and buf.find(b"\t", s, e) < 0
        and buf[e - 1 : e] != b":"
        and _NAME_FULLMATCH(buf, s, e) is None
    ):
        return e  # (a value ending in ``:`` is the next key: ``secret.yaml: password: ...``)
    return ident_end


_BLOCK_OPEN = re.compile(rb"[A-Za-z0-9_.-]{0,60}+\\*[\"'][ \t]*\{")
"""A block labelled with a name (HCL: ``variable "db_password" {``): its ``default`` or ``value`` is
the named value."""
_BLOCK_VALUE = re.compile(
    rb"(?:[^{}]{0,400}?)(?<![A-Za-z0-9_])(?:default|value)[ \t]*=[ \t]*(?P<vq>\\*[\"'])?(?=[^\s])"
)


def _scan_block(buf: bytes, start: int, block: re.Match[bytes], out: list[Candidate]) -> int:
    lo = start - 80 if start > 80 else 0
    ident_start = lo + 1 + buf[lo:start].translate(_ID_MASK).rfind(b" ")
    ident_end = block.end() - len(block.group().lstrip(_IDCHARS))
    named = _classify_named(buf[ident_start:ident_end])
    if named is None:
        return block.end()
    m = _BLOCK_VALUE.match(buf, block.end())
    if m is None:
        return block.end()
    span = _value_span(buf, m.end(), m.group("vq"), b"=", ident_start)
    if span is None:
        return m.end()
    s, e, literal = span
    level = _LITERAL_PASSWORD if named[0] == _PASSWORD and literal else named[0]
    if s < e:
        out.append((s, e, named[1], level))
    return e


_FLAG_NAME_END = re.compile(rb"[A-Za-z0-9_.-]{0,60}+")
_FLAG_GAP = re.compile(rb"[ \t]+(?P<vq>\\*[\"'])?(?=[^\s-])")


def _scan_flag(buf: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """A command-line flag whose name says secret, whatever the program (``--access-key-secret V``,
    ``-client-secret V``, ``--db-pass V``): its value is the next word."""
    lo = start - 60 if start > 60 else 0
    dash = buf.rfind(b"-", lo, start)
    if dash < 0 or buf.find(b" ", dash, start) >= 0:
        return 0  # no dash in the word before the name: no flag (the common case, found in C)
    blank = max(buf.rfind(b" ", lo, dash), buf.rfind(b"\t", lo, dash))
    if blank < 0 or buf[blank + 1] != 45:
        return 0  # the word does not start with a dash
    ident_start = lo + 1 + buf[lo:start].translate(_ID_MASK).rfind(b" ")
    if buf[ident_start : ident_start + 1] != b"-" or not (
        ident_start == 0 or buf[ident_start - 1] in b" \t'\"("
    ):
        return 0
    name_end = _FLAG_NAME_END.match(buf, end).end()  # type: ignore[union-attr]  # {0,} always matches
    gap = _FLAG_GAP.match(buf, name_end)
    if gap is None:
        return 0
    named = _classify_named(buf[ident_start:name_end].lstrip(b"-"))
    if named is None:
        return name_end
    span = _value_span(buf, gap.end(), gap.group("vq"), b"=", ident_start)
    if span is None:
        return name_end
    s, e, literal = span
    level = named[0]
    if level == _PASSWORD:
        level = _LITERAL_PASSWORD  # a word on a command line is a string
    if s < e:
        out.append((s, e, named[1], level))
    return e


_COUNTS = re.compile(
    rb"s?(?:(?:_|\\*[\"']?[ \t]*[:=][ \t]*\\*[\"']?)?(?:count|limit|used|total|per|budget)|s(?![a-z0-9_.-]))"
)
"""``input_tokens``, ``total_token_count``, ``maxTokens``, ``tokens_per_second``: a model's token counts,
which a transcript's usage records repeat on every turn; such a name says no secret (``classify``
would say so too, after more work). A secret's word elsewhere in the name has its own anchor."""


def _scan_token(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    if _COUNTS.match(low, end) is not None:
        return end
    return scan_assignment(buf, low, start, end, out)


_SPACED = re.compile(rb"[A-Za-z0-9]*(?:_[A-Za-z0-9]+)+[ \t]+(?P<vq>\\*[\"'])?(?=[A-Za-z0-9+/])")


def _scan_spaced(buf: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """A snake-case name and its value after a blank, as some programs take their settings on a
    command line (``rclone config create r s3 secret_access_key V``, ``key_value_pairs``): the value must
    prove itself at the name's level, as an unquoted word would."""
    lo = start - 60 if start > 60 else 0
    ident_start = lo + 1 + buf[lo:start].translate(_ID_MASK).rfind(b" ")
    if ident_start and buf[ident_start - 1] not in b" \t":
        return 0
    m = _SPACED.match(buf, ident_start)
    if m is None or m.start() != ident_start or m.end() <= end:
        return 0
    name_end = buf.find(b" ", ident_start, m.end())
    tab = buf.find(b"\t", ident_start, m.end())
    if tab >= 0 and (name_end < 0 or tab < name_end):
        name_end = tab
    named = _classify_named(buf[ident_start:name_end])
    if named is None:
        return 0
    word = UNQUOTED.match(buf, m.end(), m.end() + MAX_UNQUOTED)
    if word is None:
        return 0
    s, e = word.span()
    if m.group("vq") is not None and buf[e - 1 : e] in (b'"', b"'"):
        e -= len(m.group("vq"))
    level = named[0] if named[0] != _LITERAL_PASSWORD else _PASSWORD
    if s < e:
        out.append((s, e, named[1], level))
    return e


_TABLE_NEXT = (b"|", b",", b"\t", b"\r", b"\n", b"\\")
_TABLE_NEXT_BLANK = (b" |", b" ,", b" \t", b" \r", b" \n")
"""What follows a table header's cell: the next cell's separator, or the line's end."""
_BLANKS = (b" ", b"\t")
_ROW_BREAK = re.compile(rb"\r?\n|\\+n")
_RULE_LINE = re.compile(rb"[ \t0-9+]*[-+|: \t]+")
"""A table's rule under its header (``----+------``, ``|---|---|``), after a gutter."""
_CELL_NAME = re.compile(rb"[A-Za-z_][A-Za-z0-9_.-]*")
MAX_ROWS = 64


def _scan_table(buf: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """A column headed by a secret's name in a table (psql's output, a CSV file, a Markdown table):
    each row's cell in that column is the named value, written as data."""
    brk = _ROW_BREAK.search(buf, end, end + 512)
    if brk is None:
        return 0
    lo = max(0, start - 512)
    raw, esc = buf.rfind(b"\n", lo, start), buf.rfind(b"\\n", lo, start)
    quote = buf.rfind(b'"', lo, start)  # a table inside a JSON string starts after its quote
    line_start = max(raw + 1, esc + 2 if esc >= 0 else 0, quote + 1, lo)
    header = buf[line_start : brk.start()]
    sep = (
        b"|"
        if header.count(b"|") >= 1
        else b","
        if header.count(b",") >= 2
        else b"\t"
        if header.count(b"\t") >= 2
        else b""
    )
    if not sep:
        return 0
    cells = header.split(sep)
    column = header[: start - line_start].count(sep)
    name = cells[column].strip()
    if _CELL_NAME.fullmatch(name) is None or name.lower().find(buf[start:end].lower()) < 0:
        return 0
    named = _classify_named(name)
    if named is None:
        return 0
    level = _LITERAL_PASSWORD if named[0] == _PASSWORD else named[0]
    pos = brk.end()
    for _ in range(MAX_ROWS):
        nxt = _ROW_BREAK.search(buf, pos, pos + MAX_UNQUOTED)
        row_end = nxt.start() if nxt is not None else min(len(buf), pos + MAX_UNQUOTED)
        quoted = buf.find(b'"', pos, row_end)
        if quoted >= 0:  # the table's JSON string ends here
            row_end = quoted - len(buf[pos:quoted]) + len(buf[pos:quoted].rstrip(b"\\"))
        row = buf[pos:row_end]
        if _RULE_LINE.fullmatch(row) is not None:
            pass  # the rule under the header
        elif not row.strip() or row.count(sep) != header.count(sep):
            break
        else:
            s = pos + sum(len(c) + 1 for c in row.split(sep)[:column])
            cell = row.split(sep)[column]
            s += len(cell) - len(cell.lstrip())
            e = s + len(cell.strip())
            if s < e:
                out.append((s, e, named[1], level))
        if nxt is None or quoted >= 0:
            break
        pos = nxt.end()
    return pos


_SESSION_KEYS = tuple(w + p for w in (b"session", b"sess") for p in (b'"', b"'", b"=", b":", b"\\"))
"""A session's value under its name (``"user_session": "..."``, ``SESS=...``): anchored with what
follows the name, so the many ``sessionId`` keys of a transcript never reach the rule."""


_PW_KEYS = tuple(
    b"pw" + after for after in (b"=", b":", b'"', b"'", b" ", b"\t", b"\\", b"\n", b"\r", b"|", b",")
)
"""A name ending in ``pw`` (``RootPw:``, ``ADMIN_PW=``): anchored with what follows it, so the ``pw``
inside random tokens never reaches the rule."""


def _scan_session_key(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    return scan_assignment(buf, low, start, end - 1, out)


_FISH_SET = re.compile(
    rb"(?:setx|setenv|set(?:[ \t]+-[A-Za-z]+|[ \t]+--(?:export|global|universal))*?[ \t]+(?:-[A-Za-z]*x[A-Za-z]*|--export)"
    rb"(?:[ \t]+-[A-Za-z]+|[ \t]+--(?:global|universal))*)[ \t]+(?P<name>[A-Za-z_][A-Za-z0-9_]*)[ \t]+"
    rb"(?P<vq>\\*[\"'])?(?=[^\s])"
)


def scan_fish_set(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """fish's ``set -x NAME value`` (``-gx``, ``-Ux``, ``--export``), Windows' ``setx NAME value``,
    csh's and launchctl's ``setenv NAME value``: an assignment without ``=``."""
    m = _FISH_SET.match(buf, start)
    if m is None:
        return 0
    named = _classify_named(m.group("name"))
    if named is None:
        return m.end()
    span = _value_span(buf, m.end(), m.group("vq"), b"=", m.start("name"))
    if span is None:
        return m.end()
    s, e, _ = span
    level = named[0]
    if level == Level.PASSWORD:
        level = Level.LITERAL_PASSWORD  # a word in fish is a string, as in an env file
    if s < e:
        out.append((s, e, named[1], level))
    return e


_CALL_PAIR = re.compile(
    rb"\([ \t]*(?P<uq>\\*[\"'])[^\"'\\\r\n]{1,128}(?P=uq)[ \t]*,[ \t]*(?:password[ \t]*=[ \t]*)?"
    rb"(?P<q>\\*[\"'])(?P<v>[^\"'\\\r\n]{1,128})(?P=q)[ \t]*[,)]"
)


def scan_login_call(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """``server.login("user", "pw")``, ``auth=("user", "pw")``, ``HTTPBasicAuth("u", "p")``: a
    password passed by position after a user, as a literal."""
    m = _CALL_PAIR.match(buf, end - 1)
    if m is None:
        return 0
    s, e = m.span("v")
    out.append((s, e, "password", _LITERAL_PASSWORD))
    return m.end()


def generic_rules() -> list[ScanRule]:
    return [
        ScanRule(
            "password", (b"login(", b"auth=(", b"basicauth(", b"auth(", b"authenticate("), scan_login_call
        ),
        ScanRule("secret-assignment", ANCHORS, scan_assignment),
        ScanRule("secret-assignment", (b"token",), _scan_token),
        ScanRule("secret-assignment", _SESSION_KEYS, _scan_session_key),
        ScanRule("secret-assignment", _PW_KEYS, _scan_session_key),
        ScanRule("secret-assignment", (b"set -", b"setx ", b"setenv "), scan_fish_set),
    ]

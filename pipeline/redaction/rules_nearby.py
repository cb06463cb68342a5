"""Random-looking tokens near a word that names a credential, in any construction: "X is the api
key for staging", "Authenticated with credentials X", "set the signing secret to X and redeploy",
"licence key X", and the string literals handed to a credential's constructor
(``credential.Credential("<id>", "<secret>")``).

The word says what a nearby value is; the value's shape says whether it is one: long enough, of a
token's alphabet, random (a digit beside letters, or a long mix of cases; many different
characters), and not a hash, digest, UUID, address, path, URL, version or name. The word must
stand as a word (not inside an identifier, where the assignment rule reads the name), on the same
line as the value and a few words from it, and not be a public key's or a hash's word.
"""

from __future__ import annotations

import re

from pipeline.redaction.filters import enough_distinct, is_placeholder, is_reference
from pipeline.redaction.model import CONTEXT, Candidate, ScanRule
from pipeline.redaction.placeholders import is_documented_example

NAME = "token-near-word"

_WORDS = (
    b"key",
    b"apikey",
    b"secret",
    b"token",
    b"credential",
    b"creds",
    b"password",
    b"passwd",
    b"passphrase",
    b"passcode",
    b"licence",
    b"license",
    b"cookie",
    b"bearer",
    b"pat",
    b"access code",
    b"auth code",
    b"activation code",
    b"recovery code",
)
_WORD_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
AFTER = 72
"""How far after the word (bytes, same line) a value may sit: "the signing secret is set to X"."""
BEFORE = 40
"""How far before the word: "X is the api key"."""
_TOKEN = re.compile(
    rb"(?<![A-Za-z0-9_+/=.~-])[A-Za-z0-9_][A-Za-z0-9_+/.~-]{14,254}[A-Za-z0-9]={0,2}(?![A-Za-z0-9_+/=.~-])"
)
_TOKEN_AT_LINE_START = re.compile(_TOKEN.pattern.removeprefix(rb"(?<![A-Za-z0-9_+/=.~-])"))
"""``_TOKEN`` where a line starts: after a JSON-escaped ``\\n`` the ``n`` is no part of it."""
_TOKEN_LINE_END = re.compile(rb"\r|\n|\\+[nr]|\\*\"[ \t]*(?:[,}\]]|$)")
"""Where a line holding only a token ends: a line break, or the end of the JSON string it is the last line of."""
_CALL_ARG = re.compile(rb"\\*[\"'](?P<v>[A-Za-z0-9][A-Za-z0-9_+/.~-]{14,254}[A-Za-z0-9]={0,2})\\*[\"']")
_LINE_END = re.compile(rb"\r|\n|\\+[nr]")
_CLAUSE_END = re.compile(rb"\r|\n|\\+[nr]|\\*\"[ \t]*[,:}\]]|[.!?](?:[ \t\"'\\]|$)")
"""Where the sentence after a word ends: a line break, the end of the JSON string it sits in, or a
full stop (a version's dots have no blank after them)."""
_HEX = re.compile(rb"(?:0x)?[0-9a-fA-F]+")
_UUID = re.compile(rb"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_DIGIT = re.compile(rb"[0-9]")
_LOWER = re.compile(rb"[a-z]")
_UPPER = re.compile(rb"[A-Z].*[A-Z].*[A-Z]")
_VERSION = re.compile(rb"v?[0-9]+(?:\.[0-9]+)+(?:[-+][0-9A-Za-z.]+)?")
_NOT_A_SECRET = re.compile(
    rb"(?i:public|pub|publishable|host|fingerprint|checksum|digest|hash|sha[0-9]*|md5|commit|uuid|arn"
    rb"|id|ids|name|path|file|url|uri|version|no|not|without|invalid|expired|rotated|revoked|missing)"
)
"""Words that say a value near a credential's word is something else (a public key, a key's id or
fingerprint, a hash) or is no longer a credential's value."""
_BETWEEN_WORD = re.compile(rb"[A-Za-z]+")


_NAME_PARTS = re.compile(rb"(?:^|(?<=[-_./]))[a-z]{4,}(?=[-_./]|$)")


def token_shape(value: bytes) -> bool:
    """Does ``value``, standing alone, look like a random credential?"""
    n = len(value)
    if _UUID.fullmatch(value) or _VERSION.fullmatch(value) or is_placeholder(value):
        return False
    if _HEX.fullmatch(value):  # a hex key: long, both letters and digits (an all-digit run is a number)
        return (
            n >= 32
            and _DIGIT.search(value) is not None
            and not value.isdigit()
            and enough_distinct(value, 10)
        )
    if not _DIGIT.search(value) and not (n >= 20 and _LOWER.search(value) and _UPPER.search(value)):
        return False
    if not _LOWER.search(value) and not (_UPPER.search(value) and n >= 16):
        return False
    if (b"." in value or b"/" in value or b"-" in value or b"_" in value) and (
        is_reference(value) or len(_NAME_PARTS.findall(value)) >= 2
    ):
        return False  # a name, a path, words joined by dashes (``claude-sonnet-4-5``)
    return enough_distinct(value, min(10, n // 2))


_REACH = 320
"""How far a token may run past the window's edge (a value starting inside it is taken whole)."""
_SSH_PUBLIC = (b"AAAAB3NzaC1", b"AAAAC3NzaC1", b"AAAAE2VjZHNh", b"AAAAGnNrLXNzaC")


_ASSIGNED = re.compile(rb"s?\\*[\"']?[ \t]*(?:=|:(?![/:]))")
"""``key=...``, ``"token": ...``: an assignment, which the assignment rule reads by the name."""


def _line_start(buf: bytes, lo: int, start: int) -> int:
    nl = buf.rfind(b"\n", lo, start)
    cr = buf.rfind(b"\r", lo, start)
    return max(lo, nl + 1, cr + 1)


def _denied(buf: bytes, a: int, b: int) -> bool:
    return any(_NOT_A_SECRET.fullmatch(w.group()) for w in _BETWEEN_WORD.finditer(buf, a, b))


_TOKEN_START = re.compile(rb"(?<![A-Za-z0-9_+/=.~-])[A-Za-z0-9_][A-Za-z0-9_+/.~-]{14}")


def _next_token(buf: bytes, pos: int, hi: int) -> re.Match[bytes] | None:
    """The next token starting in ``[pos, hi)``, taken whole even past ``hi``."""
    while pos < hi:
        head = _TOKEN_START.search(buf, pos, hi + 15)
        if head is None:
            return None
        m = _TOKEN.match(buf, head.start(), head.start() + 260)
        if m is not None:
            return m
        pos = head.end()
    return None


def _denied_before(buf: bytes, start: int) -> bool:
    """Is the word before the credential's word one that says it is no secret ("public key")?"""
    words = buf[max(0, start - 16) : start].split()
    return bool(words) and _NOT_A_SECRET.fullmatch(words[-1].strip(b"\"'(")) is not None


def _judge(buf: bytes, m: re.Match[bytes]) -> bool:
    v = m.group()
    s = m.start()
    return token_shape(v) and not v.startswith(_SSH_PUBLIC) and buf[s - 2 : s] != b"0x"


def _nearby(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    if low[start] == 46:  # .credential(
        return _constructor(buf, start, end - 1, out)
    if low[start] in _LEAD:
        while low[start] in _LEAD:  # past the blank or escape the anchor holds
            start += 1
    elif start and low[start - 1] in _GLUE and low[start - 2 : start] != b"\\n":
        return 0  # a rarer word inside an identifier (``license_url``, ``mycredentials``)
    nxt = buf[end : end + 1]
    if nxt == b"(":
        return _constructor(buf, start, end, out)
    if nxt and nxt[0] in _WORD_CHARS and not (nxt == b"s" and buf[end + 1 : end + 2] not in _WORD_BYTES):
        return 0  # keyboard, tokenizer (a plural goes on)
    if buf[start - 10 : start] == b"[REDACTED:":
        return 0  # a placeholder's rule name (``[REDACTED:password:1f3a]``), not a word
    assigned = _ASSIGNED.match(buf, end)
    if assigned is not None and not low.startswith(b"cookie", start):
        brk = _BLANK_BREAK.match(buf, assigned.end())
        if brk is not None:  # "the new api key:" and the line ends: the value is on the next one
            _next_line(buf, start, end, brk.end(), out)
        return 0  # (a cookie's own name follows its word: ``cookies={"sid": "..."}``)
    _after(buf, start, end, out)
    _before(buf, start, out)
    return end  # (not past the tokens found: a later word, ``.Credential(``, may see more)


def _after(buf: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """Tokens after the word: "set the signing secret to X", "credentials X"."""
    found = end
    hi = min(len(buf), end + AFTER)
    stop = _CLAUSE_END.search(buf, end, hi)
    if stop is not None:
        hi = stop.start()
    m = _next_token(buf, end, hi)
    while m is not None:
        if _judge(buf, m):
            if _denied(buf, end, m.start()) or _denied_before(buf, start):
                break  # "key fingerprint: ...", "token is invalid", "public key"
            out.append((*m.span(), NAME, CONTEXT))
            found = m.end()
        m = _next_token(buf, m.end(), hi)
    if found == end and stop is not None and hi - end <= _LEAD_IN and _LINE_END.fullmatch(stop.group()):
        _next_line(buf, start, end, stop.end(), out)  # "here's the token for the importer:" then the token
    return found


_BLANK_BREAK = re.compile(rb"[ \t]*(?:\r?\n|\\+n)")
_LEAD_IN = 40
"""How much may follow the word on its line for the next line's token to be the word's: "token below"."""
_QUOTED_LINE = re.compile(rb"(?:[ \t]*(?:>{1,3}|\|)(?=[ \t]))?[ \t]*")


def _next_line(buf: bytes, start: int, end: int, nxt: int, out: list[Candidate]) -> None:
    """A token standing alone at the start of the line after the word's (a reply may quote both)."""
    lead = _QUOTED_LINE.match(buf, nxt)
    at = nxt if lead is None else lead.end()
    m = _TOKEN_AT_LINE_START.match(
        buf, at, at + 260
    )  # (most next lines start with no token: tell that first)
    if m is None or _denied(buf, end, nxt) or _denied_before(buf, start) or not _judge(buf, m):
        return
    after = _TOKEN_LINE_END.match(buf, m.end())
    if after is None and m.end() < len(buf):
        return  # the token is not the line's whole text
    out.append((*m.span(), NAME, CONTEXT))


def _before(buf: bytes, start: int, out: list[Candidate]) -> None:
    """A token before the word, joined to it: "X is the api key", "X ← that's the bot's token",
    "X (it's the service account's key)"."""
    near = buf[max(0, start - BEFORE) : start].split()[-4:]
    if not any(_link(w.lstrip(b"(")) for w in near):
        return
    lo = _line_start(buf, max(0, start - BEFORE - _REACH), start)
    words = [w.lstrip(b"(") or w for w in buf[lo:start].split()[-6:]]
    i = len(words) - 1
    while (
        i >= 0
        and len(words) - i <= 3
        and (words[i].isalpha() or _FILLER.fullmatch(words[i]) is not None)
        and not _link(words[i])
    ):
        i -= 1  # "the", "api", "signing", "account's"
    if i < 1 or not _link(words[i]) or any(_NOT_A_SECRET.fullmatch(w) for w in words[i:]):
        return
    while i > 1 and _link(words[i - 1]):
        i -= 1  # "X ← that's": a mark and a link
    v = words[i - 1].strip(b"\"'`(,")
    e = buf.rfind(v, lo, start)
    if e >= 0 and _TOKEN_WHOLE.fullmatch(v) and token_shape(v) and not v.startswith(_SSH_PUBLIC):
        out.append((e, e + len(v), NAME, CONTEXT))


_LINKS = frozenset(b"is was are as that's it's here's that\xe2\x80\x99s it\xe2\x80\x99s".split())
_MARK = re.compile(rb"(?:[^A-Za-z0-9_\s]|\\+u[0-9a-fA-F]{4})+")
"""A mark between a value and the word after it: ``=``, ``:``, a dash, an arrow (raw or JSON-escaped)."""


def _link(word: bytes) -> bool:
    """What joins a value to the word after it: a copula ("is", "that's"), or a mark."""
    if word.lower() in _LINKS:
        return True
    return word[:1] in _MARK_START and _MARK.fullmatch(word) is not None


_MARK_START = frozenset(
    bytes((c,)) for c in range(256) if c >= 128 or not (chr(c).isalnum() or chr(c) in " \t\n\r\"'_")
)
"""The first byte of a mark (most words in code and JSON open with a letter or a quote: no regex)."""


_FILLER = re.compile(rb"[A-Za-z]+(?:'s|\xe2\x80\x99s)?")
"""Words between the link and the credential's word: "the", "signing", "account's"."""
_TOKEN_WHOLE = re.compile(rb"[A-Za-z0-9][A-Za-z0-9_+/.~-]{14,254}[A-Za-z0-9]={0,2}")


_WORD_BYTES = tuple(bytes((c,)) for c in _WORD_CHARS)
_CALL_END = re.compile(rb"\)")


def _constructor(buf: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """``Credential("<id>", "<secret>")``, ``Token("...")``: string literals handed to a call whose
    name says credential; each one that looks random is one."""
    hi = min(len(buf), end + AFTER + _REACH)
    stop = _LINE_END.search(buf, end, hi)
    if stop is not None:
        hi = stop.start()
    close = _CALL_END.search(buf, end, hi)
    limit = hi if close is None else close.start()
    for m in _CALL_ARG.finditer(buf, end + 1, limit):
        if token_shape(m.group("v")):
            out.append((*m.span("v"), NAME, CONTEXT))
    return limit


_BEFORE_WORD = (b" ", b"\t", b"\n", b"\\n", b"\\t", b"(")
"""What stands before a word of a sentence (not an identifier's part, nor a quoted key, which the
assignment rule reads): anchors carry it, so ``api_key``, ``max_tokens`` and ``"key":`` never
reach the rule."""


_GLUE = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_.$/-")
_LEAD = frozenset(b" \t\n\\\"'(")
_COMMON = frozenset((b"key", b"token", b"secret", b"password", b"cookie", b"pat"))
"""Words JSON and code use as keys all the time (``"key":``): anchored with the blank before them,
so a quoted key (the assignment rule's) never reaches this rule; the rarer words stand alone."""


def _anchors() -> tuple[bytes, ...]:
    common = tuple(b + w for w in _WORDS if w in _COMMON for b in _BEFORE_WORD)
    return (*common, *(w for w in _WORDS if w not in _COMMON), b".credential(")


# A token whose own prefix names what it is (``tskey-auth-...``, ``acme_live_key_...``): a short
# lower-case prefix holding a credential's word, more short segments, then a random body.
_PREFIX_WORDS = (b"key", b"token", b"auth", b"secret", b"pat", b"cred")
_PREFIXED = re.compile(
    rb"(?:[a-z0-9]{1,12}[-_.]){0,3}[a-z0-9]{0,16}(?:key|tok|token|auth|secret|pat|api|cred|sk|pw)(?:[-_.][a-z0-9]{1,12}){0,3}[-_.]"
    rb"(?P<body>[A-Za-z0-9][A-Za-z0-9_-]{18,250}[A-Za-z0-9])(?![A-Za-z0-9_.+/=-])"
)
_PREFIX_BACK = 40
_PREFIX_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_-.")
_RUN = re.compile(rb"[A-Za-z0-9]{16,}")
_CAMEL_WORDS = re.compile(rb"[a-z]*(?:[A-Z][a-z]+|[A-Z]{2,3}(?![a-z]))+")
"""Words joined in camel case (``GetUserById2Handler``, digits aside): a name, not a random body."""
_IDENT_LEFT = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.$/-")
PREFIXED_NAME = "prefixed-token"


def camel_words(run: bytes) -> bool:
    """Words joined in camel case (``GetUserById2Handler``), digits aside, of three letters or more
    on average: a name. Random bodies rarely parse so, and then into pairs (``XpHcJd``)."""
    letters = run.translate(None, b"0123456789")
    if not _CAMEL_WORDS.fullmatch(letters):
        return False
    words = sum(1 for c in letters if 65 <= c <= 90) or 1
    return len(letters) / words >= 3.5


def body_random(body: bytes) -> bool:
    """A random body: a digit, both cases (or 32 and more hex digits), many different characters."""
    if _HEX.fullmatch(body):
        return len(body) >= 32 and enough_distinct(body, 12)
    run = max(_RUN.findall(body), key=len, default=b"")  # a random run, not dashed words
    return (
        (_DIGIT.search(run) is not None or len(run) >= 24)
        and _LOWER.search(run) is not None
        and any(65 <= c <= 90 for c in run)
        and enough_distinct(run, 12)
        and not camel_words(run)
        and _DIGIT.search(body) is not None
        and _LOWER.search(body) is not None
        and any(65 <= c <= 90 for c in body)
        and enough_distinct(body, 14)
        and not is_placeholder(body)
    )


_BODY_AHEAD = re.compile(rb"[A-Za-z0-9_.-]{20}")


def _prefixed(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    if _BODY_AHEAD.match(buf, end) is None:
        return 0  # too short a run after the word for a body: a name (``auth_url``, ``key-value``)
    s = start
    while s > 0 and start - s < _PREFIX_BACK and buf[s - 1] in _PREFIX_CHARS:
        s -= 1
    while buf[s] in b"_-.":
        s += 1
    if s and (buf[s - 1] in _IDENT_LEFT or 65 <= buf[s - 1] <= 90) and buf[s - 2 : s] != b"\\n":
        return 0  # inside an identifier or a path
    m = _PREFIXED.match(buf, s)
    if m is None or m.start("body") < end:
        return 0
    if body_random(m.group("body")) and not is_documented_example(m.group()):
        out.append((s, m.end(), PREFIXED_NAME, CONTEXT))
    return m.end()


def _client(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """``transactional.Client("<key>")``, ``MailClient('<key>', ...)``: a service's client handed its
    key by position; each literal that looks random is one."""
    if buf[end : end + 1] not in _QUOTE_OPEN:
        return 0  # (most clients take no literal first: ``Client()``, ``Client(config)``)
    return _constructor(buf, start, end - 1, out)


_QUOTE_OPEN = (b'"', b"'", b"\\")


# A prompt that confirms the secret typed at the prompt before it ("Confirm:", "Repeat for
# confirmation:", "Retype new password:"): the value on its line is the same secret, whether or not
# the first prompt echoed it.
_CONFIRM_LABEL = re.compile(rb"[^:\r\n\\]{0,40}:[ \t]*")
_PROMPT_WORD = re.compile(
    rb"(?i:secret|pass|token|key|pin\b|credential|code)[^:\r\n]{0,24}:(?:[ \t]|\\[nr]|\r|\n|$)"
)
_LINE_OR_END = re.compile(rb"[ \t]*(?:\r|\n|\\+[nr]|\\*\"|$)")
_PREVIOUS = 240
"""How far back the prompt before may start."""


def _confirmation(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    label = _CONFIRM_LABEL.match(buf, end)
    if label is None:
        return 0
    m = _TOKEN.match(buf, label.end(), label.end() + 260)
    if m is None or _LINE_OR_END.match(buf, m.end()) is None or not _judge(buf, m):
        return 0
    here = _line_start_any(buf, start)
    before = _line_start_any(buf, max(0, here - 2))  # the line before this one
    if here - before > _PREVIOUS or _PROMPT_WORD.search(buf, before, here) is None:
        return 0
    out.append((*m.span(), NAME, CONTEXT))
    return m.end()


def _line_start_any(buf: bytes, pos: int) -> int:
    """Where the line holding ``pos`` starts (after a raw or a JSON-escaped line break)."""
    lo = max(0, pos - _PREVIOUS)
    raw = max(buf.rfind(b"\n", lo, pos), buf.rfind(b"\r", lo, pos)) + 1
    escaped = buf.rfind(b"\\n", lo, pos)
    return max(raw, escaped + 2 if escaped >= 0 else 0, lo if raw == 0 and escaped < 0 else 0)


def nearby_rules() -> list[ScanRule]:
    prefixed = tuple(w + sep for w in _PREFIX_WORDS for sep in (b"-", b"_"))
    return [
        ScanRule(NAME, _anchors(), _nearby),
        ScanRule(PREFIXED_NAME, prefixed, _prefixed),
        ScanRule(NAME, (b"client(",), _client),
        ScanRule(
            NAME,
            (b"confirm", b"repeat", b"retype", b"re-enter", b"reenter", b"verify", b"again"),
            _confirmation,
        ),
    ]

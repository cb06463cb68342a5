"""A secret stated in a sentence, in any of the languages developers write in: "the password for
root on the NAS = letmein123", "hasło do serwera to Kot123!x", "パスワードは neko1234 です",
"la clé API est 8f7d...", "my PIN is 4829", "use etrhsdbv42 as the password".

One mechanism, not one rule per language; the languages are data (``prose_lexicon.txt``, read by
``lexicon``: each language's words and stems for a secret, its copulas, final copulas and
particles). A word that names a secret (its class decides what the
value must look like: a password, a PIN, or a key or token), then the words of the sentence up to a
way of saying "is" (a copula of any language, ``:``, ``=``, a dash, or a particle glued to the
word in languages written without spaces), then the value. A verb-final language states the value
right after the name ("मेरा पासवर्ड Billi2024 है"): a value that ends the sentence or stands
before a final copula is one too, and so is a value before the name with a copula or a particle
between ("Tr0ub4dor&3 is the password"). The value must look like a secret (a digit or a symbol beside
letters, a PIN's digits, a key's random shape); prose about passwords ("le mot de passe est
incorrect", "the password was changed on 2024-01-15") keeps its words.
"""

from __future__ import annotations

import json
import re
import unicodedata

from pipeline.redaction.filters import enough_distinct, is_placeholder, is_reference
from pipeline.redaction.lexicon import lexicon
from pipeline.redaction.model import CONTEXT, Candidate, ScanRule, kept
from pipeline.redaction.reasons import Reason
from pipeline.redaction.rules_generic import classify
from pipeline.redaction.rules_label import label_rules


def _words(text: str) -> list[str]:
    return text.split()


PASSWORD, PIN, KEY, TOKEN = "password", "pin", "key", "token"

_LEX = lexicon()
_LEXICON: dict[str, str] = _LEX.names
"""Words that name a secret, by language (``prose_lexicon.txt``): the word and its kind."""
_COPULAS = sorted(_LEX.copulas)
"""Ways of saying "is" (and "equals", "reads"), spaced: they stand as words of their own."""
_GLUED = sorted(_LEX.particles)
"""Copulas and particles written glued to the word before them (languages without spaces)."""
_SOFT = frozenset(
    _words(
        """the a an just now simply still currently literally set to always actually now: ist: new
        old our my your his her their der die das le la el il lo o a ein eine un une uno una"""
    )
)
"""Words that may stand between the copula and the value ("is now X", "is set to X")."""
_DENY = frozenset(
    _words(
        """id ids name names type types path file files dir url uri host hostname version length
        len size count limit ttl expiry expires expiration timeout header field prefix suffix
        format kind algorithm policy region label hint mode scope usage method provider source
        store manager fingerprint hash hashes digest checksum pattern regex template schema
        rotation strength reset requirements requirement rules rule policy must should will can
        cannot can't could would may might needs need stored saved kept located missing wrong
        incorrect invalid expired required optional public pub publishable öffentlich
        öffentliche öffentlicher publique public pública publico pubblica публичный открытый 公開
        公钥 公鑰 공개 not nicht pas no non nie ne не"""
    )
)
_PUBLIC_WORDS = tuple(
    b"public pub publishable host ssh gpg pgp signing verification verify encryption".split()
)
"""Matched in any case, ``_``, ``-`` or blanks after them (``ssh_key``, ``Public key``)."""
_PUBLIC_WORDS_LOCAL = tuple(
    w.encode() for w in ("öffentliche", "öffentlicher", "öffentlichen", "publique", "pública", "публичный")
)
"""Matched as written, blanks after them."""
_PUBLIC_REACH = 24


def _public_before(buf: bytes, start: int) -> bool:
    """Does a word that names a public key (or says what a key is for) end right before the key
    word at ``start``, within ``_PUBLIC_REACH`` bytes (a line break just before it aside)? Then the
    key word names no secret. Tested from the end: no search over the bytes before."""
    before = buf[max(0, start - _PUBLIC_REACH) : start]
    if before.rstrip(b" \t_-").lower().endswith(_PUBLIC_WORDS) or before.rstrip(b" \t").endswith(
        _PUBLIC_WORDS_LOCAL
    ):
        return True
    if before[-1:] != b"\n":
        return False
    before = before[:-1]
    return before.rstrip(b" \t_-").lower().endswith(_PUBLIC_WORDS) or before.rstrip(b" \t").endswith(
        _PUBLIC_WORDS_LOCAL
    )


_ASSIGNED = re.compile(rb"(?:\\*[\"'])?[ \t]*(?::|=|:=|=>)")
_ASCII_WORD = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_GLUE_BEFORE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.$@/")
_ASCII_AFTER_OK = frozenset(b" \t:\\")
WINDOW = 200
_MAX_FILLERS = 6
_MAX_STEPS = 14

_NO_SPACE_SCRIPT = "\u3000-\u30ff\u3400-\u9fff\uac00-\ud7af\u0e00-\u0e7f\uff00-\uffef"
_COPULA_RE = re.compile(
    r"(?:"
    + "|".join(re.escape(c) for c in sorted(_COPULAS, key=len, reverse=True))
    + r")(?=\s|$|[\"'`“«「])",
    re.IGNORECASE,
)
_COPULA_SET = frozenset(c.lower() for c in _COPULAS)
_ELIDED_COPULAS = ("c'est", "c’est", "C'est", "C’est")
_ARROWS = ("->", "=>")
_DASHES = frozenset(("-", "–", "—"))
_QUOTE_OPEN = frozenset("\"'`“«「『")
_GLUED_ENDS = frozenset(c[-1] for c in _GLUED if not c.isascii())
_GLUED_RE = re.compile("(?:" + "|".join(re.escape(c) for c in sorted(_GLUED, key=len, reverse=True)) + ")")
_QUOTED = re.compile(r"[\"'`“«「『]([^\"'`”»」』\n]{1,128})[\"'`”»」』]")
_VALUE = re.compile(r"[^\s\"'`“”«»「」『』()\[\]{}<>,;" + _NO_SPACE_SCRIPT + r"]+")
_WORD = re.compile(r"[^\s]+?(?=\s|$|[" + _NO_SPACE_SCRIPT + r"])|[" + _NO_SPACE_SCRIPT + r"]+")
_TRAIL = ".,;:!?)]}…"
_FINAL = re.compile(
    r"\s*(?:$|[\"'`]|[.!?。！？](?:\s|$|[\"'`])|,|;|(?:"
    + "|".join(re.escape(c) for c in sorted(_LEX.finals, key=len, reverse=True))
    + r")(?:[\s.!?,;\"'`\\।。]|$)|["
    + _NO_SPACE_SCRIPT
    + r"])"
)
"""What may follow a value stated without a copula before it: the sentence's end or a final copula."""
_VERSION = re.compile(r"[vV]?[0-9]+(?:\.[0-9]+)+(?:[-+.][0-9A-Za-z.]+)?")
_DATE_OR_NUMBER = re.compile(r"[0-9]+(?:[.,:/-][0-9]+)+|[0-9]+(?:st|nd|rd|th|%|px|ms|s|h|d|x)?")
_HEX_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")
_TOKEN_CHARS = re.compile(r"[A-Za-z0-9+/=_.~:-]+")
_LETTER = re.compile(r"[^\W\d_]")
_DIGIT = re.compile(r"[0-9]")
_SYMBOL = re.compile(r"[!#$%&*+=?@^~|]")
_INNER_UPPER = re.compile(r"[a-z][A-Z]")
_THREE_UPPER = re.compile(r"[A-Z].*[A-Z].*[A-Z]")
_WORDS = re.compile(r"[^\W\d_]+(?: [^\W\d_]+)+")
_PASSPHRASE = re.compile(r"[^\W\d_A-Z]+(?: [^\W\d_A-Z]+){1,7}")
"""Lower-case words in quotes after a password's name: a passphrase ("puni lidika veti nemuge")."""
_JOINED_WORDS = re.compile(r"[a-z]{2,}(?:([-._])[a-z]{2,})(?:\1[a-z]{2,}){1,10}")


def _anchors() -> tuple[dict[bytes, str], frozenset[bytes]]:
    """Every form of every word (its case forms, raw and JSON-escaped once or twice) and its kind;
    and the forms that are stems."""
    out: dict[bytes, str] = {}
    stems: set[bytes] = set()
    for word, kind in _LEXICON.items():
        forms = {word, word[:1].upper() + word[1:], word.upper()}
        for form in forms:
            raws = [form.encode()]
            if not form.isascii():  # as a transcript holds it JSON-escaped, once or twice
                once = json.dumps(form)[1:-1]
                raws += [once.encode(), json.dumps(once)[1:-1].encode()]
            for raw in raws:
                out.setdefault(raw.lower(), kind)
                if word in _LEX.stems:
                    stems.add(raw.lower())
    return out, frozenset(stems)


_ANCHORS, _STEMS = _anchors()
_TAIL_PIECE = re.compile(rb"[A-Za-z]|[\xc2-\xf4][\x80-\xbf]{1,3}|\\+u[0-9a-fA-F]{4}")
_TAIL_MAX = 16


def _stem_end(buf: bytes, end: int) -> int:
    """Where the word whose stem ends at ``end`` ends: its own endings (letters and marks of a
    script written with spaces, raw or JSON-escaped) taken in."""
    for _ in range(_TAIL_MAX):
        m = _TAIL_PIECE.match(buf, end)
        if m is None:
            break
        piece = m.group()
        if piece[0] == 92:
            char = chr(int(piece[-4:], 16))
        else:
            try:
                char = piece.decode("utf-8")
            except UnicodeDecodeError:
                break
        if not _word_char(char):
            break
        end = m.end()
    return end


def _word_char(char: str) -> bool:
    """A letter or a mark of a script that spaces its words (not a particle of one that does not)."""
    if char.isascii():
        return char.isalpha()
    return unicodedata.category(char)[0] in "LM" and _NO_SPACE_CHAR.match(char) is None


_CODE_WORDS = frozenset((b"token", b"key", b"secret", b"pw", b"api"))
"""Words code glues into identifiers all the time (``api_key``, ``API_TOKEN``): their anchor holds
the character before them, so a name inside an identifier never reaches the rule."""
_UPPER_ONLY = frozenset((b"api",))
_SPACES = (b" ", b"\t", b"\n", b"\\n", b"(")
"""Names that count only in upper case: "API" qualifies a key's word in any language ("API
kaliti", "Ufunguo wa API"), "api" is code's."""
_POSSESSIVE = re.compile(rb"(?:'|\xe2\x80\x99)s[ \t]")
"""``pw's X``: the name, then "is" glued to it."""
_BEFORE_WORD = (b" ", b"\t", b"\n", b"\\n", b'"', b"'", b"(", b"*", b">", b"`")
_PREFIXED = {b + w: len(b) for w in _CODE_WORDS for b in _BEFORE_WORD if w not in _UPPER_ONLY or b in _SPACES}
_PREFIXED.update({bytes((c,)) + w: 1 for w in _UPPER_ONLY for c in range(0x80, 0xC0)})
"""... and "API" glued to a word of another script ("የAPI ቁልፉ", "API的密钥" written "的API")."""


_PREFIX_BYTES = frozenset(b[0] for b in _PREFIXED)


def _stated_anchors() -> tuple[bytes, ...]:
    return (*(a for a in _ANCHORS if a not in _CODE_WORDS), *_PREFIXED)


_MAYBE = re.compile(r"[0-9!#$%&*+=?@^~|\"'`«“「『]|[a-z][A-Z]|[a-z]{2}[-._][a-z]{2,}[-._][a-z]")
"""What a stated value needs somewhere on its line (a digit, a symbol, a quote, a mix of cases,
joined words): a cheap test before the walk."""


def _ends_in_words(text: str) -> bool:
    """Does the line end in three lower-case words (maybe a passphrase: ``_passphrase_run`` decides)?"""
    tail = text[-40:].rstrip(" \t.!\"'`}]").rsplit(" ", 3)[-3:]
    return len(tail) == 3 and all(
        2 <= len(w) <= 9 and w.isascii() and w.isalpha() and w.islower() and w not in _FUNCTION_WORDS
        for w in tail
    )


_ESCAPE = re.compile(rb"(\\+)(?:u([0-9a-fA-F]{4})|([nrt\"'\\/]))")


def _whole_chars(chunk: bytes) -> bytes:
    """``chunk`` without a last character the window cut in the middle."""
    i = len(chunk) - 1
    while i >= 0 and len(chunk) - i < 4 and 0x80 <= chunk[i] < 0xC0:
        i -= 1
    if i >= 0 and chunk[i] >= 0xC0:
        need = 2 if chunk[i] < 0xE0 else 3 if chunk[i] < 0xF0 else 4
        if len(chunk) - i < need:
            return chunk[:i]
    return chunk


def _window(buf: bytes, pos: int, limit: int | None = None) -> tuple[str, str | None]:
    """The text after ``pos`` up to the end of its line (raw or JSON-escaped), a placeholder or ``limit``, decoded
    and unescaped; and the decoded text before unescaping (``None`` when its characters are its
    bytes: plain ASCII, no escapes), from which ``_byte_offset`` maps a character back."""
    hi = min(len(buf), pos + WINDOW) if limit is None else limit
    nl = buf.find(b"\n", pos, hi)
    if nl >= 0:
        hi = nl
    placeholder = buf.find(b"[REDACTED", pos, hi)
    if placeholder >= 0:  # a value already redacted ends the statement: what follows is not its value
        hi = placeholder
    chunk = buf[pos:hi]
    if b"\\" not in chunk:
        if chunk.isascii():
            return chunk.decode("ascii"), None
        raw = _whole_chars(chunk).decode("utf-8", "surrogatepass")
        return raw, raw
    cut = _ESCAPED_BREAK.search(chunk)
    if cut is not None:
        chunk = chunk[: cut.start()]
    raw = _whole_chars(chunk).decode("utf-8", "surrogatepass")
    return _UNESCAPE.sub(_unescape, raw), raw


_ESCAPED_BREAK = re.compile(rb"\\+[nr]")
_UNESCAPE = re.compile(r"\\+(?:u([0-9a-fA-F]{4})|([\"'\\/t]))")


def _unescape(m: re.Match[str]) -> str:
    if m.group(1) is not None:
        return chr(int(m.group(1), 16))
    return " " if m.group(2) == "t" else m.group(2)


def _byte_offset(raw: str, index: int) -> int:
    """The byte offset (from the window's start) of character ``index`` of the unescaped text."""
    if "\\" not in raw:  # no escape: characters map to bytes one by one (a decoded window)
        return len(raw[:index].encode("utf-8", "surrogatepass"))
    text_pos = raw_pos = 0
    for m in _UNESCAPE.finditer(raw):
        literal = m.start() - raw_pos
        if text_pos + literal >= index:
            break
        text_pos += literal + 1
        raw_pos = m.end()
        if text_pos > index:  # inside an escape: its start
            raw_pos = m.start()
            break
    r = raw_pos + (index - text_pos)
    return len(raw[:r].encode("utf-8", "surrogatepass"))


def looks_like(value: str, kind: str, quoted: bool) -> Reason | None:
    """Why ``value``, stated for a secret of ``kind``, is not one (``None``: it is one)."""
    n = len(value)
    raw = value.encode("utf-8", "surrogatepass")
    if n < 3 or (n < 4 and not quoted):
        return Reason.TOO_SHORT
    if n > 256:
        return Reason.TOO_LONG
    if is_placeholder(raw) or value.strip("*xX.•") == "":
        return Reason.PLACEHOLDER
    if kind == PIN:
        if value.isdigit():
            return None if 4 <= n <= 12 else Reason.SHAPE
        kind = PASSWORD
    if (_DATE_OR_NUMBER.fullmatch(value) and not (value.isdigit() and n >= 6)) or _VERSION.fullmatch(value):
        return Reason.SHAPE  # a date, a version, a count
    if kind == PASSWORD and _JOINED_WORDS.fullmatch(value):
        return None  # a passphrase of joined words: hekiru-hidi-dotu-gulefi
    if raw.isascii() and (kind != PASSWORD or b"_" in raw or b"/" in raw) and is_reference(raw):
        return Reason.REFERENCE  # (a sentence states a password as it is: "kaqxgxfOljsgn" is no name)
    if kind == PASSWORD:
        return _password_verdict(value, raw, quoted)
    return _token_verdict(value, raw, kind)


def _password_verdict(value: str, raw: bytes, quoted: bool) -> Reason | None:
    """A password stated in prose: quoted, or a digit, a symbol or a mix of cases beside letters."""
    n = len(value)
    if quoted and (_PASSPHRASE.fullmatch(value) or not _WORDS.fullmatch(value)):
        return None if enough_distinct(raw, min(3, n // 2)) else Reason.NOT_RANDOM
    if value.isdigit():
        return None
    letter = _LETTER.search(value) is not None
    if letter and (_DIGIT.search(value) or _SYMBOL.search(value) or _INNER_UPPER.search(value)):
        return None if enough_distinct(raw, min(4, n // 2)) else Reason.NOT_RANDOM
    return Reason.WORDS


def _token_verdict(value: str, raw: bytes, kind: str) -> Reason | None:
    """A key or a token: a random shape (length, alphabet, different characters)."""
    n = len(value)
    if _HEX_ADDRESS.fullmatch(value):
        return Reason.SHAPE  # an address (public)
    if n < (8 if kind == TOKEN else 12):
        return Reason.TOO_SHORT
    if not _TOKEN_CHARS.fullmatch(value) or not _LETTER.search(value):
        return Reason.SHAPE
    if not _DIGIT.search(value) and not (
        n >= 20 and _INNER_UPPER.search(value) and _THREE_UPPER.search(value)
    ):
        return Reason.SHAPE  # no digit: only a long mix of cases is random enough
    return None if enough_distinct(raw, min(8, n // 2)) else Reason.NOT_RANDOM


def _emit(
    out: list[Candidate], pos: int, raw: str | None, s: int, e: int, reason: Reason | None, kind: str
) -> int:
    if raw is not None:
        s, e = _byte_offset(raw, s), _byte_offset(raw, e)
    bs, be = pos + s, pos + e
    name = "password" if kind in (PASSWORD, PIN) else "secret-in-prose"
    out.append((bs, be, name, CONTEXT) if reason is None else kept(bs, be, name, reason))
    return be


def _strip(text: str, s: int, e: int) -> int:
    while e > s and text[e - 1] in _TRAIL:
        e -= 1
    return e


def _in_code(buf: bytes, start: int, end: int, kind: str, ascii_name: bool) -> bool:
    """Is the word at ``[start, end)`` a name in code or part of another word, not prose?"""
    if start and ascii_name and buf[start - 1] in _GLUE_BEFORE and buf[start - 2 : start] != b"\\n":
        return True  # DB_PASSWORD, api.key, $token: a name in code (the assignment rule's)
    if ascii_name and start and buf[start - 1] == 45 and (start < 2 or buf[start - 2] in b"- \t"):
        return True  # --password, -token: a flag (the command-line rule's)
    nxt = buf[end : end + 1]
    if (
        ascii_name
        and nxt
        and nxt[0] < 0x80
        and (nxt[0] not in _ASCII_AFTER_OK or nxt in (b"=", b"-", b"."))
        and _POSSESSIVE.match(buf, end) is None
    ):
        return True  # passwords, tokenizer, key=..., token-based, key.value
    if kind in (KEY, TOKEN) and _public_before(buf, start):
        return True  # a public key, a host key
    # ``password: x`` or ``token = x`` is an assignment: the generic rule judges it (it knows YAML
    # and code); a sentence goes on with words
    return ascii_name and _ASSIGNED.match(buf, end) is not None and classify(buf[start:end]) is not None


_NO_SPACE_CHAR = re.compile("[" + _NO_SPACE_SCRIPT + "\u0e80-\u0eff\u1780-\u17ff\u1000-\u109f]")
"""Scripts whose words a particle follows unspaced (CJK, Thai, Lao, Khmer, Myanmar)."""

_COMPOUND = re.compile(rb"-(?:[A-Za-z]|[\xc0-\xf4][\x80-\xbf]+|\\+u[0-9a-fA-F]{4}){1,16}(?![A-Za-z0-9_])")
"""A compound's tail: ``PIN-kód``, ``PIN-код``, ``API-nya``, ``PIN-koodi``."""
_SUFFIX = re.compile(rb"(?:nya|et|en|a|an|ul|ului|ja|t|n|koden|kode|kod|koodi|code|nummer)(?![A-Za-z0-9_])")
"""Inflections glued to a secret's word: ``sandinya``, ``kodeordet``, ``Pinkoden``, ``parolaul``."""


def _compound_end(buf: bytes, low: bytes, end: int) -> int:
    """Where the word ending at ``end`` ends once its compound tail or inflection is taken in."""
    nxt = buf[end : end + 1]
    if nxt == b"-":
        m = _COMPOUND.match(buf, end)
        if m is not None and low[end + 1 : end + 6] not in (b"based", b"value", b"prote", b"less"):
            return m.end()
    elif nxt.isalpha():
        m = _SUFFIX.match(low, end)
        if m is not None:
            return m.end()
    return end


_WORD_GOES_ON = frozenset(b"-ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def _name_end(buf: bytes, low: bytes, start: int, end: int, kind: str) -> int:
    """Where the name found at ``[start, end)`` ends: a stem's own endings, a compound's tail."""
    if low[start:end] in _STEMS:
        end = _stem_end(buf, end)
    if low[start:end] not in _CODE_WORDS and end < len(buf) and buf[end] < 0x80:
        word_end = _compound_end(buf, low, end)
        if word_end != end and (kind in (PIN, KEY) or (buf[end] != 45 and end - start >= 4)):
            end = word_end
    return end


def _looseness(buf: bytes, start: int, end: int, kind: str, ascii_name: bool) -> int:
    """How many words may stand between the name and a value stated without a copula."""
    if not ascii_name:
        return _MAX_FILLERS  # a verb-final language: its words stand between the name and the value
    if kind == PIN and buf[start:end].isupper():
        return _LOOSE_PIN  # "PIN kodas 4417", "PIN nömrəsi 4417": the local word for number
    return 0


def _stated(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    if low[start] in _PREFIX_BYTES:
        start += _PREFIXED.get(low[start:end], 0)
    if low[start:end] in _UPPER_ONLY and not buf[start:end].isupper():
        return 0  # "the api returns": code's word, not a key's qualifier
    first = low[start]
    if (
        first < 0x80
        and first != 92
        and start
        and buf[start - 1] in _GLUE_BEFORE
        and buf[start - 2 : start] != b"\\n"
    ):
        return 0  # most hits are a name glued into an identifier (``mapping``, ``DB_PASSWORD``)
    kind = _ANCHORS.get(low[start:end])
    if kind is None:
        return 0
    if low[start:end] in _STEMS or (end < len(buf) and buf[end] in _WORD_GOES_ON):
        end = _name_end(buf, low, start, end, kind)
    if (
        first < 0x80
        and first != 92  # a JSON-escaped word (\\u5bc6...) is not ASCII
        and (  # most hits are a name glued into an identifier: tell at once
            (start and buf[start - 1] in _GLUE_BEFORE and buf[start - 2 : start] != b"\\n")
            or (
                end < len(buf)
                and buf[end] < 0x80
                and buf[end] not in _ASCII_AFTER_OK
                and _POSSESSIVE.match(buf, end) is None
            )
        )
    ):
        if buf[end : end + 1] in _CLAUSE_END and kind in (PASSWORD, PIN):  # "Tr0ub4dor&3 is the password."
            return _value_before(buf, start, kind, None, out, end)
        return 0
    ascii_name = first != 92 and low[start:end].isascii()
    if _in_code(buf, start, end, kind, ascii_name):
        if kind != PASSWORD or buf[end : end + 1] != b":":
            return 0
        text, raw = _window(buf, end + 1)  # "GPG passphrase: laki boheli hovugi mila"
        lead = len(text) - len(text.lstrip(" \t"))
        run = _passphrase_run(text, lead)
        return 0 if run is None else _emit(out, end + 1, raw, *run, None, kind)
    text, raw = _window(buf, end)
    if _MAYBE.search(text) is None and (kind != PASSWORD or not _ends_in_words(text)):
        # nothing after it could be a value: prose about a secret (the common case), or a value
        # stated before the name ("Tr0ub4dor&3 is the password", "X がパスワードです")
        return _value_before(buf, start, kind, text, out)
    linked = low[end - 5 : end] == b" with" or low.endswith((b"'s", b"\xe2\x80\x99s"), start, end)
    found = _walk(text, kind, _looseness(buf, start, end, kind, ascii_name), linked)
    if found is None:
        return _value_before(buf, start, kind, text, out)
    return _emit(out, end, raw, *found, kind)


_BEFORE_WINDOW = 120
_CLAUSE_END = frozenset((b".", b"!", b"?", b",", b";", b'"'))
_BEFORE = re.compile(
    r"(?:^|(?<=[\s\"'`“«「(]))(?P<v>[^\s\"'`“”«»「」『』()\[\]{}<>,;]{4,128}?)[\"'`”»」]?(?:\s*(?:"
    + "|".join(re.escape(c) for c in sorted(_LEX.particles, key=len, reverse=True))
    + r")|\s+(?:"
    + "|".join(re.escape(c) for c in sorted(_LEX.copulas, key=len, reverse=True) if c[:1].isalpha())
    + r")(?:\s+[^\W\d_]{1,5})?)\s*$",
    re.IGNORECASE,
)
"""A value, then a copula (and maybe an article) or a particle, up to a secret's name."""


def _value_before(
    buf: bytes, start: int, kind: str, after: str | None, out: list[Candidate], end: int = 0
) -> int:
    """The value stated before the name at ``start`` ("Tr0ub4dor&3 is the password.",
    "X がパスワードです"), when the name ends the clause (``after``: the text after the name, or
    ``None`` to read it from ``end``)."""
    if not start or (
        buf[start - 1] not in b" \t" and buf[start - 1] < 0x80 and buf[start - 6 : start - 4] != b"\\u"
    ):
        return (
            0  # a name in quotes (a key in code) or at the text's start (a particle before it may be escaped)
        )
    if after is None:
        after = _window(buf, end)[0]
    if _FINAL.match(after) is None:
        return 0  # the clause goes on after the name
    lo = max(0, start - _BEFORE_WINDOW)
    lo = max(lo, buf.rfind(b"\n", lo, start) + 1)
    escaped = buf.rfind(b"\\n", lo, start)
    if escaped >= 0:
        lo = escaped + 2
    while lo < start and 0x80 <= buf[lo] < 0xC0:
        lo += 1
    text, raw = _window(buf, lo, start)
    m = _BEFORE.search(text)
    if m is None:
        return 0
    s, e = m.start("v"), _strip(text, m.start("v"), m.end("v"))
    if s >= e or looks_like(text[s:e], kind, False) is not None:
        return 0
    return _emit(out, lo, raw, s, e, None, kind)


def _unspaced_word(text: str, pos: int, copula: bool) -> int:
    """The end of a word of a script written without spaces at ``pos``; -1 at a sentence's end
    or after a copula (a value was due)."""
    w = _WORD.match(text, pos)
    if w is None or copula or text[w.start()] in ".!?。！？":
        return -1
    if "\u0e00" <= text[pos] <= "\u0e7f" and (thai := _THAI_RUN.match(text, pos)) is not None:
        return thai.end()  # Thai writes a phrase without spaces: "ของเซิร์ฟเวอร์" is one filler
    return w.end()


_THAI_RUN = re.compile("[\u0e00-\u0e7f]+")


def _uncopulated(text: str, s: int, e: int, kind: str, fillers: int, loose: int) -> bool:
    """Is the word at ``[s, e)``, with no copula before it, the value? A random token right
    after a key's word ("the access token 9f3c...", "API kaliti 9f3c..."), or a value stated
    verb-final ("पासवर्ड X है", "PIN kodea 4417 da"). ``loose``: how many words of the sentence
    may stand between the name and such a value."""
    value = text[s:e]
    if kind in (KEY, TOKEN) and value.lower() not in _DENY and _key_after_words(text, e, value, fillers):
        return looks_like(value, kind, False) is None
    return fillers <= loose and _FINAL.match(text, e) is not None and looks_like(value, kind, False) is None


def _key_after_words(text: str, e: int, value: str, fillers: int) -> bool:
    """May a key's value stand ``fillers`` words after its name, no copula between? Right after
    it, or a long one two words on (hex, which request ids are too, only where the clause ends)."""
    return fillers == 0 or (
        fillers <= _LOOSE_KEY
        and len(value) >= _LOOSE_KEY_LEN
        and (_HEX.fullmatch(value) is None or _FINAL.match(text, e) is not None)
    )


_LOOSE_KEY = 2
_LINK = re.compile(r"[^\W\d_]{1,4}")
_STRONG = re.compile(r"(?=.*[0-9])(?=.*(?:[A-Z].*[a-z]|[a-z].*[A-Z]|[!#$%&*+=?@^~|]))")
"""A password past a word the lexicon does not hold: a digit, and a mix of cases or a symbol."""
_MODAL_BE = re.compile(r"(?i:will|would|should|shall|must|might|may|could|can)[ \t]+be(?=[ \t])")
_LOOSE_PIN = 2
_LOOSE_KEY_LEN = 16
_HEX = re.compile(r"[0-9a-fA-F]+")


def _copula_end(word: str, pos: int, copula: bool) -> int:
    """Where the copula ``word`` at ``pos`` ends (0: it is none). A sign glued to the value
    ("=letmein123") is one character long."""
    lower = word.lower()
    if lower in _COPULA_SET and not (copula and lower in _DASHES):
        return pos + len(word)
    return pos + 1 if word[0] in "=:：" and len(word) > 1 else 0


_PHRASE_RUN = re.compile(r"[a-z]{2,9}(?: [a-z]{2,9}){2,7}(?=[ \t]*[.!]?[ \t]*(?:$|[\"'`]))")
"""Three to eight lower-case words to the line's end, after a password's name and a copula: a
passphrase ("the wifi passphrase is laki boheli hovugi mila"), unless they read as a sentence."""
_FUNCTION_WORDS = frozenset(
    _words(
        """the a an is are was were be been to of in on at for with and or not no by it its this that
        from as your my our their his her we you they he she there here than then too very must should
        will would can could may might has have had do does did required optional expired invalid
        incorrect wrong changed set reset stored saved kept needed used same different new old weak
        strong long short empty missing only also just when where which who what how why if but so
        all any some each every into onto over under after before about also"""
    )
)


def _passphrase_run(text: str, pos: int) -> tuple[int, int] | None:
    m = _PHRASE_RUN.match(text, pos)
    if m is None or any(w in _FUNCTION_WORDS for w in m.group().split()):
        return None
    return m.span()


def _stated_value(text: str, s: int, e: int, kind: str, softened: bool) -> tuple[int, int, None] | None:
    """The value right after a copula: a passphrase of words to the line's end (not after "the",
    "your"...), or one word that looks like a secret of ``kind``."""
    if not softened and kind == PASSWORD and (run := _passphrase_run(text, s)) is not None:
        return run[0], run[1], None
    if s < e and looks_like(text[s:e], kind, False) is None:
        return s, e, None
    return None


_SIGN_FIRST = frozenset("cC-=wWsSmM")
"""The first characters of what ``_sign_copula`` finds: a cheap test before it."""


def _sign_copula(text: str, pos: int) -> int:
    """Where a copula the word pattern would split ends (0: none here): French "c'est" (its quote
    is no quotation), an arrow ("password -> X": ``_VALUE`` stops at ``>``), "will be"."""
    if text.startswith(_ELIDED_COPULAS, pos):
        return pos + 5
    if text.startswith(_ARROWS, pos):
        return pos + 2
    be = _MODAL_BE.match(text, pos)  # "will be", "should be"
    return 0 if be is None else be.end()


def _walk(text: str, kind: str, loose: int, copula: bool = False) -> tuple[int, int, Reason | None] | None:
    """The value the sentence after a secret's name states, with the verdict on it, or ``None``.
    ``loose``: how many words may stand before a value stated without a copula (``_uncopulated``);
    ``copula``: the name ends in its own link ("unlock it with X")."""
    pos, n = 0, len(text)
    fillers = 0
    softened = link = False
    glued = _GLUED_RE.match(text, 0)
    if glued is not None:
        copula, pos = True, glued.end()
    for _ in range(_MAX_STEPS):
        pos = n - len(text[pos:].lstrip())
        if pos >= n:
            return None
        q = _QUOTED.match(text, pos) if copula and text[pos] in _QUOTE_OPEN else None
        if q is not None:
            return q.start(1), q.end(1), looks_like(q.group(1), kind, True)
        sign = _sign_copula(text, pos) if text[pos] in _SIGN_FIRST else 0
        if sign:
            copula, pos = True, sign
            continue
        v = _VALUE.match(text, pos)
        if v is None:  # a word of a script written without spaces, or punctuation
            pos = _unspaced_word(text, pos, copula)
            if pos < 0:
                return None
            fillers += 1
            copula = text[pos - 1] in _GLUED_ENDS  # "码是": a word, then the particle
            continue
        after = _copula_end(v.group(), pos, copula)
        if after:
            copula, pos = True, after
            continue
        s, e = v.start(), _strip(text, v.start(), v.end())
        word = text[s:e]
        lower = word.lower()
        if copula:
            stated = _stated_value(text, s, e, kind, softened)
            if stated is not None:
                return stated
            if lower in _SOFT:
                pos, softened = v.end(), True
                continue
            copula = False  # "on" was a preposition, not Finnish "is": the sentence goes on
        linked = link and (kind != PASSWORD or _STRONG.match(word) is not None)
        if s < e and _uncopulated(text, s, e, kind, fillers - linked, loose):
            return s, e, None
        if lower in _DENY or (v.end() > e and text[e] in ".,;!?"):
            return None  # a word that says what the value is not, or the clause ended
        # A language's "is" the lexicon does not hold: a short word right after the name, then a
        # value that ends the clause ("Kupuhipa ko X")
        link = fillers == 0 and _LINK.fullmatch(word) is not None and lower not in _FUNCTION_WORDS
        fillers, pos = fillers + ("api" not in lower), v.end()  # "Kunci API-nya X": part of the name
        copula = text[pos - 1] in ":："  # "Heslo k serveru: X", "Mi token de acceso: X"
        if fillers > _MAX_FILLERS:
            return None
    return None


# "use X as the password", "nimm X als Passwort": the value comes before the name.
_AS_WORDS = {
    b" as the password": PASSWORD,
    b" as password": PASSWORD,
    b" as your password": PASSWORD,
    b" as my password": PASSWORD,
    b" as the new password": PASSWORD,
    b" as the passphrase": PASSWORD,
    b" as the pin": PIN,
    b" as the token": TOKEN,
    b" as the api key": KEY,
    b" as the key": KEY,
    b" as the secret": KEY,
    b" als passwort": PASSWORD,
    b" als kennwort": PASSWORD,
    b" als wachtwoord": PASSWORD,
    b" comme mot de passe": PASSWORD,
    b" como contrase\xc3\xb1a": PASSWORD,
    b" como senha": PASSWORD,
    b" come password": PASSWORD,
    b" jako has\xc5\x82o": PASSWORD,
    b" \xd0\xba\xd0\xb0\xd0\xba \xd0\xbf\xd0\xb0\xd1\x80\xd0\xbe\xd0\xbb\xd1\x8c": PASSWORD,  # как пароль
}
_BEFORE_AS = re.compile(rb"(?:[\"'`]?)([^\s\"'`]{3,128})[\"'`]?$")


def _as_the(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    kind = _AS_WORDS.get(low[start:end])
    if kind is None or (end < len(buf) and buf[end] in _ASCII_WORD):
        return 0
    lo = max(0, start - 130)
    line = max(buf.rfind(b"\n", lo, start) + 1, lo)
    m = _BEFORE_AS.search(buf, line, start)
    if m is None:
        return 0
    s, e = m.span(1)
    value = buf[s:e]
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        return 0
    quoted = m.group(0)[:1] in (b'"', b"'", b"`")
    reason = looks_like(text.rstrip(_TRAIL), kind, quoted)
    e = s + len(text.rstrip(_TRAIL).encode())
    name = "password" if kind in (PASSWORD, PIN) else "secret-in-prose"
    out.append((s, e, name, CONTEXT) if reason is None else kept(s, e, name, reason))
    return end


def stated_rules() -> list[ScanRule]:
    return [
        ScanRule("secret-in-prose", _stated_anchors(), _stated),
        ScanRule("password", tuple(_AS_WORDS), _as_the),
        *label_rules(),
    ]

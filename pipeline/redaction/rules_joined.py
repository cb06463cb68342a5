"""A value written as several string literals that code joins: ``"ab" + "cd"``, ``'ab' . 'cd'``,
``"ab" .. "cd"``, ``'ab' || 'cd'``, ``"ab" & _`` then ``"cd"``, adjacent literals (``printf '%s'
'ab' 'cd'``), a join or concat call over an array or arguments (``"".join(["ab", "cd"])``, ``["ab",
"cd"].join("")``, ``strings.Join([]string{"ab", "cd"}, "")``, ``CONCAT('ab', 'cd')``), over lines
too, with an editor's gutter or a diff's mark before each line.

The rule reads the structure, not a list of languages: string literals of a token's alphabet, and
between them nothing but blanks, line breaks, operators and punctuation, the name of a call
wrapping them, or an empty literal (a join's separator). The pieces are joined and the value
judged whole: under a credential's name anywhere in the statement (``VAULT_TOKEN = "".join([``,
``... AS ingest_key``) as that name's value would be; with no name, only when the code visibly joins
the pieces (an operator, adjacent literals, a join or concat) and the joined value is a long
random token that no list of hashes or ids looks like.
"""

from __future__ import annotations

import re

from pipeline.redaction.filters import Level, enough_distinct, has_digit, value_verdict
from pipeline.redaction.model import CONTEXT, Candidate, ScanRule
from pipeline.redaction.rules_generic import classify
from pipeline.redaction.wrap import line_start

NAME = "joined-secret"
MAX_GROUP = 4096
MAX_GAP = 160
MIN_PIECES = 2
MAX_PIECES = 32
MIN_UNNAMED = 32
"""A joined value with no credential's name near it must be at least this long (and random)."""
NAME_BACK = 200
LINE_BACK = 1200
NAME_AHEAD = 80

_LITERAL = re.compile(rb"(?P<q>\\*[\"'`])(?P<v>[A-Za-z0-9_+/=.~-]{1,1024})(?P=q)")
_GAP = re.compile(
    rb"(?:[ \t\r\n,+.&|;_^()\[\]{}!]"  # blanks, operators, punctuation (``& _`` in VB, ``^`` in cmd)
    rb"|\\+[nrt]"  # a JSON-escaped line break or tab
    rb"|[A-Za-z_][A-Za-z0-9_.:]{0,40}(?=!?\(|\{)"  # the name of a call or of a typed array
    rb"|(?:\\*\"){2}|(?:\\*'){2}"  # an empty literal: a join's separator
    rb"|(?<![A-Za-z0-9_])(?:[fFrRbBuU]{1,2}|[@$]{1,2})(?=\\*[\"'`])"  # a literal's prefix (``f"..."``, ``@"..."``)
    rb"|[0-9]{1,6}(?:\xe2\x86\x92|\t|\\+t|\\+u2192)"  # an editor's line-number gutter
    rb"|\xe2\x94\x82|\\+u2502"
    rb")*+"
)
_QUOTES = frozenset(b"\"'`")
_NAME_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.")
_NEXT_LITERAL = frozenset((b'"', b"'", b"`", b"\\"))
_GAP_BYTES = frozenset(b" \t\r\n,+.&|;_^()[]{}!\\nrt0123456789\xe2\x86\x92\x94\x82")
"""What a gap between two literals is made of, byte by byte (``_GAP`` says whether it is one)."""
_KEY_AFTER = re.compile(rb"[ \t]*(?::(?!:)|=(?!=))")
_JOINS = re.compile(rb"(?i:join|concat|implode)")
_OPERATOR = re.compile(rb"\+|&|\|\||\.\.|[ \t]\.[ \t]|[_^\\](?=[ \t]*(?:\r?\n|\\+n))")
_IDENT = re.compile(rb"[A-Za-z_][A-Za-z0-9_]{2,60}")
_HEX = re.compile(rb"[0-9a-fA-F]+")


_LINE_REST = re.compile(rb"[^\r\n]{0,%d}?(?:\r?\n|\\+n|$)" % NAME_AHEAD)


def _named(buf: bytes, s: int, e: int) -> Level | None:
    """The strongest credential name in the statement around ``[s, e)``: on the line before the
    first piece and the first's line, and up to the end of the second line after the last."""
    here = line_start(buf, s)
    lo = max(0, s - NAME_BACK, line_start(buf, here - 1) if here else 0)
    hi = e
    for _ in range(3):
        rest = _LINE_REST.match(buf, hi)
        if rest is None:
            break
        hi = rest.end()
    best: Level | None = None
    for a, b in ((lo, s), (e, min(hi, e + NAME_AHEAD))):  # the pieces are the value, not its name
        for m in _IDENT.finditer(buf, a, b):
            level = classify(m.group(0))
            if level is not None and (best is None or level > best):
                best = level
    return best


def _joined_visibly(buf: bytes, s: int, e: int, gaps: list[bytes]) -> bool:
    """Does the code join the pieces (rather than list them)?"""
    if _JOINS.search(buf, max(0, s - 40), min(len(buf), e + 24)) is not None:
        return True
    return any(_OPERATOR.search(g) is not None or b"," not in g for g in gaps)


def _items(pieces: list[bytes]) -> bool:
    """Pieces that are items of a list rather than parts of one value: hashes, or all of one
    length and one prefix (``sha512-...``, ids)."""
    if all(_HEX.fullmatch(p) for p in pieces):
        return True
    first = pieces[0]
    return len(first) >= 16 and all(len(p) == len(first) and p[:4] == first[:4] for p in pieces)


def _judge(buf: bytes, s: int, e: int, pieces: list[bytes], gaps: list[bytes]) -> bool:
    if _items(pieces):
        return False
    value = b"".join(pieces)
    level = _named(buf, s, e)
    if level is not None:
        return value_verdict(value, max(level, Level.SECRET) if level is Level.KEY else level) is None
    if len(value) < MIN_UNNAMED or not _joined_visibly(buf, s, e, gaps):
        return False
    return _random(value)


def _random(value: bytes) -> bool:
    """A long value of mixed case and digits, of many different characters: a token by its shape."""
    mixed = value.lower() != value and value.upper() != value and has_digit(value)
    return mixed and enough_distinct(value, 16) and value_verdict(value, Level.KEY) is None


Group = tuple[list[bytes], list[bytes], int, int]
"""The pieces, the gaps between them, where the first starts and where the last ends."""


def _forward(buf: bytes, pos: int, hi: int) -> Group:
    """The literals joined one to the next from the one at ``pos`` (or after a gap from it)."""
    pieces: list[bytes] = []
    gaps: list[bytes] = []
    first = last = pos
    for _ in range(MAX_PIECES):
        gap = _GAP.match(buf, last, hi)
        at = last if gap is None else gap.end()
        if at - last > MAX_GAP:
            break
        m = _LITERAL.match(buf, at, hi)
        if m is None or _KEY_AFTER.match(buf, m.end()) is not None:  # ``"name": ...``: a key
            break
        if pieces:
            gaps.append(buf[last:at])
        else:
            first = at
        pieces.append(m.group("v"))
        last = m.end()
    return pieces, gaps, first, last


def _backward(buf: bytes, group: Group, lo: int) -> Group:
    """``group`` with the literals joined to it from before."""
    pieces, gaps, first, last = group
    for _ in range(MAX_PIECES):
        close = first - 1
        while close > lo and first - close <= MAX_GAP and buf[close] in _GAP_BYTES:
            close -= 1
        if buf[close] in _NAME_BYTES:  # a call's name (``"ab".concat("cd")``): ``_GAP`` checks it below
            while close > lo and first - close <= MAX_GAP and buf[close] in _NAME_BYTES:
                close -= 1
            while close > lo and first - close <= MAX_GAP and buf[close] in _GAP_BYTES:
                close -= 1
        if close <= lo or buf[close] not in _QUOTES:
            break
        opened = _opening(buf, close)
        m = None if opened < lo else _LITERAL.match(buf, opened, close + 1)
        if m is None or m.end() != close + 1 or _GAP.fullmatch(buf, m.end(), first) is None:
            break
        pieces.insert(0, m.group("v"))
        gaps.insert(0, buf[m.end() : first])
        first = m.start()
    return pieces, gaps, first, last


def _opening(buf: bytes, close: int) -> int:
    """Where the literal whose closing quote is at ``close`` opens (its backslashes included)."""
    q = buf[close : close + 1]
    escapes = 0
    while close - escapes > 0 and buf[close - escapes - 1] == 92:
        escapes += 1
    opened = buf.rfind(q, max(0, close - 1040), close)
    while opened > 0 and buf[opened - 1] == 92:
        opened -= 1
    return opened


def _scan(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    lo = max(0, start - LINE_BACK)
    hi = min(len(buf), end + MAX_GROUP)
    if buf[start] in _QUOTES:  # the anchor starts at a literal's closing quote
        before = start - 1
        while before > 0 and buf[before] == 92:  # ``\"``: the closing quote escaped
            before -= 1
        if before < 0 or buf[before] not in _TOKEN_CHARS:
            return 0
        gap = _GAP.match(buf, start + 1, hi)
        if gap is None or buf[gap.end() : gap.end() + 1] not in _NEXT_LITERAL:
            return 0  # nothing is joined to this literal
        opened = _opening(buf, start)
        if opened < 0:
            return 0
        group = _forward(buf, opened, hi)
        if len(group[0]) < MIN_PIECES or group[2] != opened:
            return 0
    else:  # a join's name: the pieces follow (``concat(``) or come before (``].join(``)
        group = _forward(buf, end, hi)
        if not group[0]:
            named = _joined_variable(buf, start, end)
            if named is not None:
                return _judge_variable(buf, start, named, out)
            group = ([], [], start, start)
    pieces, gaps, first, last = _backward(buf, group, lo)
    if len(pieces) < MIN_PIECES:
        return 0
    if _judge(buf, first, last, pieces, gaps):
        out.append((first, last, NAME, CONTEXT))
    return last


# A list of pieces assigned to a variable and joined later: ``parts = ["ab", "cd"]`` then
# ``TOKEN = "".join(parts)`` (or ``parts.join("")``, ``strings.Join(parts, "")``).
_JOIN_ARG = re.compile(rb"[ \t]*(?P<n>[A-Za-z_$@][A-Za-z0-9_]{0,60})[ \t]*[,)]")
_JOIN_RECEIVER = re.compile(rb"(?P<n>[A-Za-z_$@][A-Za-z0-9_]{0,60})\.$")
_LIST_OPEN = re.compile(rb"[ \t]*(?::=|=)[ \t]*(?:[A-Za-z_.]{0,20}\(|\[\][A-Za-z]{1,12}\{|[\[({])")
JOINED_BACK = 1200


def _joined_variable(buf: bytes, start: int, end: int) -> bytes | None:
    """The variable a join call joins (its argument, or the receiver of ``.join(``)."""
    m = _JOIN_ARG.match(buf, end)
    if m is not None:
        return m.group("n")
    m = _JOIN_RECEIVER.search(buf, max(0, start - 62), start + 1 if buf[start : start + 1] == b"." else start)
    return None if m is None else m.group("n")


def _judge_variable(buf: bytes, start: int, name: bytes, out: list[Candidate]) -> int:
    """The literals listed in ``name``'s assignment before ``start``, judged joined."""
    lo = max(0, start - JOINED_BACK)
    at = buf.rfind(name, lo, start)
    while at >= 0:
        if not at or buf[at - 1] not in _TOKEN_CHARS:
            opener = _LIST_OPEN.match(buf, at + len(name))
            if opener is not None:
                pieces, gaps, first, last = _forward(buf, opener.end(), start)
                if len(pieces) >= MIN_PIECES and not _items(pieces):
                    level = _named(buf, start, start)
                    value = b"".join(pieces)
                    if level is not None and value_verdict(value, max(level, Level.SECRET)) is None:
                        out.append((first, last, NAME, CONTEXT))
                return start
        at = buf.rfind(name, lo, at)
    return start


APPEND_BACK = 800
_VALUE = rb"(?P<q>\\*[\"'`]?)(?P<v>[A-Za-z0-9_+/=.~-]{4,1024})(?P=q)"
_APPEND_TARGET = re.compile(
    rb"(?:(?<=\\[nrt])|(?<![A-Za-z0-9_.:$@\\]))(?P<t>[$@]?[A-Za-z_][A-Za-z0-9_.:]{0,60})[ \t]*$"
)
_APPENDED = re.compile(rb"[+.&]=[ \t]*" + _VALUE)
_WRITE_VALUE = re.compile(_VALUE)
_DIGITS = frozenset(b"0123456789")
_BLANKS = frozenset(b" \t")
_TOKEN_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+/=.~-")
MAX_WRITTEN = 1024
_TARGET_AT = re.compile(rb"[ \t]*(?P<t>[^\s\"'`\\;|&<>]{1,200})")


def _appended_variable(buf: bytes, start: int, out: list[Candidate]) -> int:
    """``T = "ab"`` then ``T += "cd"``: the pieces of one value appended to one variable."""
    lo = max(0, start - 64)
    target = _APPEND_TARGET.search(buf, lo, start)
    appended = _APPENDED.match(buf, start)
    if target is None or appended is None:
        return 0
    name = target.group("t")
    initial = None
    lo = max(0, start - APPEND_BACK)
    at = buf.rfind(name, lo, target.start())
    while at >= 0 and initial is None:
        initial = _ASSIGNED.match(buf, at + len(name))
        at = buf.rfind(name, lo, at)
    if initial is None:
        return appended.end()
    pieces = [initial.group("v"), appended.group("v")]
    spans = [initial.span("v"), appended.span("v")]
    _judge_apart(buf, pieces, spans, name, out)
    return appended.end()


def _written_before(buf: bytes, at: int) -> re.Match[bytes] | None:
    """The literal an ``echo`` or ``printf`` writes before the redirection at ``at``."""
    if at < 0:
        return None
    e = at
    if e > 1 and buf[e - 1] in _DIGITS and buf[e - 2] in _BLANKS:
        e -= 1  # ``2>>``: a descriptor
    while e > 0 and buf[e - 1] in _BLANKS:
        e -= 1
    if e == 0:
        return None
    if buf[e - 1] in _QUOTES:
        opened = _opening(buf, e - 1)
    else:
        opened = e
        while opened > 0 and e - opened < MAX_WRITTEN and buf[opened - 1] in _TOKEN_CHARS:
            opened -= 1
    if opened < 0 or opened == e:
        return None
    m = _WRITE_VALUE.match(buf, opened, e)
    return m if m is not None and m.end() == e else None


_ASSIGNED = re.compile(rb"[ \t]*=(?!=)[ \t]*" + _VALUE)
_PATH_END = frozenset((b" ", b"\t", b"\r", b"\n", b'"', b"'", b"`", b"\\", b";", b"|", b"&", b"<", b">"))
_SINGLE_REDIRECT = re.compile(rb">[ \t]*$")


def _redirect_before(buf: bytes, at: int) -> int:
    """Where a single ``>`` stands before the path at ``at`` (``-1`` when none does)."""
    m = _SINGLE_REDIRECT.search(buf, max(0, at - 8), at)
    if m is None or buf[m.start() - 1 : m.start()] == b">":
        return -1
    return m.start()


def _appended_file(buf: bytes, start: int, out: list[Candidate]) -> int:
    """``echo -n 'ab' > F`` then ``echo 'cd' >> F``: the pieces of one value appended to one file."""
    appended = _written_before(buf, start)
    path = _TARGET_AT.match(buf, start + 2)
    if appended is None or path is None:
        return 0
    initial = None
    target = path.group("t")
    lo = max(0, appended.start() - APPEND_BACK)
    at = buf.rfind(target, lo, appended.start())
    while at >= 0 and initial is None:
        after = buf[at + len(target) : at + len(target) + 1]
        if not after or after in _PATH_END:
            initial = _written_before(buf, _redirect_before(buf, at))
        at = buf.rfind(target, lo, at)
    if initial is None:
        return path.end()
    pieces = [initial.group("v"), appended.group("v")]
    spans = [initial.span("v"), appended.span("v")]
    _judge_apart(buf, pieces, spans, path.group("t"), out)
    return path.end()


def _judge_apart(
    buf: bytes, pieces: list[bytes], spans: list[tuple[int, int]], target: bytes, out: list[Candidate]
) -> None:
    value = b"".join(pieces)
    level = max((classify(m.group(0)) or 0 for m in _IDENT.finditer(target)), default=0)
    if level:
        found = value_verdict(value, Level(max(level, Level.SECRET) if level == Level.KEY else level)) is None
    else:
        found = _judge(buf, spans[0][0], spans[-1][1], pieces, [b" + "])
    if found:
        out.extend((s, e, NAME, CONTEXT) for s, e in spans)


def _append(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    if buf[start + 1] == 61:  # ``+=``, ``.=``, ``&=``
        return _appended_variable(buf, start, out)
    at = buf.index(b">>", start, end)  # the anchor is a literal's closing quote, then ``>>``
    if buf[at + 2 : at + 3] == b">":
        return at + 3  # ``>>>``: a prompt, not a redirection
    return _appended_file(buf, at, out)


# A hex dump (``xxd``, ``hexdump -C``): rows of an offset, the bytes in hex and the same bytes as
# text. The rows are pieces of one file; when the file is a token, every row is a piece of it.
_DUMP_ROW = re.compile(
    rb"[0-9a-f]{8}(?::[ ](?P<xxd>[0-9a-f ]{39})[ ]{2}|[ ]{2}(?P<hd>[0-9a-f ]{47,49})[ ]{1,2}\|)"
    rb"(?P<text>[^\r\n]{1,40}?)\|?(?=[ \t]*(?:\r?\n|\\+n|\\*[\"']|$))"
)
_ROW_BREAK = re.compile(rb"[ \t]*(?:\r?\n|\\+n)")
MAX_DUMP_ROWS = 256
_PRINTABLE = re.compile(rb"[\x21-\x7e]+")


def _hex_dump(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """The rows of a hex dump starting at offset 0, read as one file: a token when the bytes
    they hold are one (judged under the name on the command line above, or by shape)."""
    rows: list[tuple[int, int]] = []
    data = bytearray()
    pos = start
    for _ in range(MAX_DUMP_ROWS):
        m = _DUMP_ROW.match(buf, pos)
        if m is None:
            break
        hexes = (m.group("xxd") or m.group("hd") or b"").replace(b" ", b"")
        try:
            data += bytes.fromhex(hexes.decode("ascii"))
        except ValueError:
            break
        rows.append((m.start("xxd") if m.group("xxd") else m.start("hd"), m.end("text")))
        brk = _ROW_BREAK.match(buf, m.end())
        if brk is None:
            break
        pos = brk.end()
    value = bytes(data).strip()
    if not rows or _PRINTABLE.fullmatch(value) is None:
        return pos
    level = _named(buf, start, start)
    if level is not None:
        found = value_verdict(value, max(level, Level.SECRET)) is None
    else:
        found = len(value) >= MIN_UNNAMED and _random(value)
    if found:
        out.extend((s, e, NAME, CONTEXT) for s, e in rows)
    return pos


# A value sent in parts, each labelled as one: "first half of the deploy token: ...", then a line or
# a message later "second half: ...". The first carries the credential's name; a later part only
# says it is a part.
_PART_LABEL = re.compile(rb"[^\r\n:\\]{0,40}?:[ \t]*(?P<v>[A-Za-z0-9_+/=.~-]{16,512})(?=[\s\"'\\,;]|$)")
PART_BACK = 400


def _labelled_part(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """A random value under a label saying it is a part, a credential named in the lines before."""
    m = _PART_LABEL.match(buf, end)
    if m is None:
        return 0
    lo = max(0, start - PART_BACK)
    if any(classify(w.group(0)) is not None for w in _IDENT.finditer(buf, lo, m.start("v"))) and _random(
        m.group("v")
    ):
        out.append((*m.span("v"), NAME, CONTEXT))
    return m.end()


# A credential's name over a YAML sequence of pieces: ``api_token:`` then ``  - ab`` and ``  - cd``.
_SEQ_KEY_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
MAX_SEQ_KEY = 80
_SEQ_ITEM = re.compile(
    rb"(?:\r?\n|\\+n)(?P<indent>[ \t]*)-[ \t]+(?P<q>\\*[\"']?)(?P<v>[A-Za-z0-9_+/=.~-]{1,512})(?P=q)"
    rb"(?=[ \t]*(?:\r?\n|\\+[nr\"]|$))"
)


def _sequence(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """The items of a YAML sequence under a credential's name, judged joined."""
    k = start
    while k > 0 and start - k < MAX_SEQ_KEY and buf[k - 1] in _SEQ_KEY_CHARS:
        k -= 1
    if k == start:
        return 0
    level = classify(buf[k:start])
    if level is None:
        return 0
    pieces: list[bytes] = []
    spans: list[tuple[int, int]] = []
    pos, indent = start + 1, None
    for _ in range(MAX_PIECES):
        m = _SEQ_ITEM.match(buf, pos)
        if m is None or (indent is not None and m.group("indent") != indent):
            break
        indent = m.group("indent")
        pieces.append(m.group("v"))
        spans.append(m.span("v"))
        pos = m.end("v") + len(m.group("q"))
    if len(pieces) >= MIN_PIECES and not _items(pieces):
        value = b"".join(pieces)
        if value_verdict(value, max(level, Level.SECRET)) is None:
            out.extend((s, e, NAME, CONTEXT) for s, e in spans)
    return pos


# A token a mail client or a terminal wrapped inside a quoted reply: lines under one quote mark,
# each wholly a run of a token's alphabet, the first as long as the wrap width, together a value
# longer than any id or name (a random token of 80 characters and more, read by its shape).
_QUOTED_RUN = re.compile(
    rb"(?:\r?\n|\\+n)(?P<mark>[ \t]*(?:>{1,3}|\|)[ \t]+)(?P<v>[A-Za-z0-9_-]{8,200})(?=[ \t]*(?:\r?\n|\\+n|\\*\"|$))"
)
MIN_WRAP_WIDTH = 48
MIN_WRAPPED_TOKEN = 80


def _quoted_wrap(buf: bytes, low: bytes, start: int, end: int, out: list[Candidate]) -> int:
    """The lines of a token wrapped under a quote mark, judged joined by their shape."""
    first = _QUOTED_RUN.match(buf, start)
    if first is None or len(first.group("v")) < MIN_WRAP_WIDTH:
        return 0
    spans = [first.span("v")]
    pieces = [first.group("v")]
    pos = first.end()
    for _ in range(MAX_PIECES):
        m = _QUOTED_RUN.match(buf, pos)
        if m is None or m.group("mark") != first.group("mark") or len(m.group("v")) > len(pieces[-1]):
            break
        spans.append(m.span("v"))
        pieces.append(m.group("v"))
        pos = m.end()
        if len(m.group("v")) < len(pieces[-2]):
            break  # a shorter line ends the wrapped value
    value = b"".join(pieces)
    if (
        len(pieces) >= MIN_PIECES
        and len(value) >= MIN_WRAPPED_TOKEN
        and enough_distinct(value, 20)
        and _random(value)
    ):
        out.extend((s, e, NAME, CONTEXT) for s, e in spans)
    return pos


def _anchors() -> tuple[bytes, ...]:
    operators = (b" +", b"+", b" .", b" ..", b"..", b" &", b" ||", b"||")
    # a line break after a single-quoted literal (a shell array, SQL); after a double-quoted one
    # it is everywhere (JSON), and a join's or concat's name or an operator marks those instead
    breaks = (b"',\n", b"',\\", b"'\n", b"'\\")
    prefixed = tuple(q + b" " + p + e for q in (b'"', b"'") for p in (b"f", b"r", b"b") for e in (q, b"\\"))
    adjacent = (b"' '", b'" "', *prefixed)
    quoted = tuple(q + j for q in (b'"', b"'") for j in operators)
    return (*quoted, *breaks, *adjacent, b"join(", b"concat", b"implode(")


def joined_rules() -> list[ScanRule]:
    return [
        ScanRule(NAME, _anchors(), _scan),
        ScanRule(NAME, (b"+=", b".=", b"&=", b"' >>", b'" >>', b"'>>", b'">>'), _append),
        ScanRule(NAME, (b"00000000: ", b"00000000  "), _hex_dump),
        ScanRule(
            NAME, tuple(brk + q for brk in (b"\n", b"\\n") for q in (b"> ", b">> ", b"| ")), _quoted_wrap
        ),
        ScanRule(
            NAME,
            tuple(
                b":" + brk + pad + b"- " for brk in (b"\n", b"\\n", b"\\\\n") for pad in (b"", b"  ", b"    ")
            ),
            _sequence,
        ),
        ScanRule(
            NAME,
            (b"half", b"the rest", b"remainder", b"part 2", b"part two", b"second part", b"last part"),
            _labelled_part,
        ),
    ]

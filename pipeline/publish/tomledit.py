"""Editing one table of someone else's TOML file as text: every other byte stays.

``tomllib`` reads TOML but writes none, and a round trip through any writer loses comments, order
and layout. ``set_table`` and ``remove_table`` therefore work on lines: a table is its header line
(``[mcp_servers.memd]``, in any quoting or spacing of its keys) and the lines up to the next header
that is not one of its own sub-tables; a new table goes at the end of the file after a blank line,
and its removal takes that blank line back. The result is parsed with ``tomllib`` and must hold
exactly what was meant (the table's values, everything else as it was): a table defined another way
(an inline table, dotted keys under ``[mcp_servers]``), a header inside a multi-line string, or a
file that is not TOML is ``TomlEditError`` and the text is left alone. Standard library only.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping, Sequence
from typing import Any

_BARE = re.compile(r"[A-Za-z0-9_-]+")
_KEY_PART = re.compile(r"""\s*(?:([A-Za-z0-9_-]+)|"((?:[^"\\]|\\.)*)"|'([^']*)')\s*""")
_HEADER = re.compile(r"^[ \t]*(\[\[?)(.*?)(\]\]?)[ \t]*(?:#.*)?$")

TomlValue = str | bool | int | Sequence[str]


class TomlEditError(ValueError):
    """The text is not TOML, or the table is written in a way a line edit cannot change safely."""


def loads(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TomlEditError(f"it is not valid TOML ({exc})") from None


def get_table(text: str, path: Sequence[str]) -> Any:
    """The value at ``path`` (``("mcp_servers", "memd")``), or None when some key is absent."""
    data: Any = loads(text)
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def render_table(path: Sequence[str], values: Mapping[str, TomlValue], nl: str = "\n") -> str:
    """``[a.b]`` and one ``key = value`` line per value, each ending in ``nl``."""
    lines = [f"[{'.'.join(_key(part) for part in path)}]"]
    lines += [f"{_key(k)} = {_value(v)}" for k, v in values.items()]
    return nl.join(lines) + nl


def _newline(text: str) -> str:
    """The file's line ending: CRLF when it uses one, else LF."""
    return "\r\n" if "\r\n" in text else "\n"


def set_table(text: str, path: Sequence[str], values: Mapping[str, TomlValue]) -> str:
    """``text`` with the table at ``path`` holding exactly ``values`` (in place when it is there,
    else appended), every other line kept."""
    data = loads(text)
    expected = _with(data, path, dict(values))
    spans = _spans(text, path)
    nl = _newline(text)
    table = render_table(path, values, nl)
    if not spans:
        if _lookup(data, path) is not None:
            raise TomlEditError(
                f"[{'.'.join(path)}] is defined there without a table header of its own; edit it by hand"
            )
        new = table if not text.strip() else text + ("" if text.endswith("\n") else nl) + nl + table
    else:
        if _lookup(data, path) == expected_value(values):
            return text
        first = spans[0][0]
        kept = _cut(text, spans)
        new = kept[:first] + table + _blank_after(kept, first, nl) + kept[first:]
    return _checked(new, expected, path)


def expected_value(values: Mapping[str, TomlValue]) -> dict[str, Any]:
    """``values`` as ``tomllib`` reads them back."""
    return {k: list(v) if isinstance(v, (list, tuple)) else v for k, v in values.items()}


def remove_table(text: str, path: Sequence[str]) -> str:
    """``text`` without the table at ``path`` and its sub-tables; ``text`` itself when it is absent."""
    data = loads(text)
    if _lookup(data, path) is None:
        return text
    spans = _spans(text, path)
    if not spans:
        raise TomlEditError(
            f"[{'.'.join(path)}] is defined there without a table header of its own; remove it by hand"
        )
    new = _cut(text, [_with_blank(text, span) for span in spans])
    if spans[-1][1] == len(text):  # it ended the file: the blank line put before it goes too
        trimmed = new.rstrip("\r\n")
        new = trimmed + _newline(text) if trimmed else ""
    expected = _without(data, path)
    return _checked(new, expected, path)


def _with_blank(text: str, span: tuple[int, int]) -> tuple[int, int]:
    """A span that a blank line precedes (or the file's start) takes one blank line after it too,
    so no gap of two blank lines is left where it was."""
    start, end = span
    nl = _newline(text)
    before_blank = start == 0 or text[:start].endswith(nl + nl)
    if before_blank and text.startswith(nl, end):
        return start, end + len(nl)
    return span


def _blank_after(kept: str, at: int, nl: str) -> str:
    """A blank line between the replaced table and what follows it, when something follows."""
    rest = kept[at:]
    return nl if rest.strip() and not rest.startswith(("\n", "\r\n")) else ""


def _cut(text: str, spans: Sequence[tuple[int, int]]) -> str:
    out, last = [], 0
    for start, end in spans:
        out.append(text[last:start])
        last = end
    out.append(text[last:])
    return "".join(out)


def _spans(text: str, path: Sequence[str]) -> list[tuple[int, int]]:
    """Where the table at ``path`` and its sub-tables are: (start, end) offsets of whole lines,
    from a header to the next header of another table (trailing blank lines left to what follows)."""
    spans: list[tuple[int, int]] = []
    offset = 0
    inside: int | None = None
    last_content = 0
    for line in text.splitlines(keepends=True):
        header = _header_key(line)
        if header is not None:
            mine = tuple(header[: len(path)]) == tuple(path)
            if inside is not None and not mine:
                spans.append((inside, last_content))
                inside = None
            if mine and inside is None:
                inside = offset
        offset += len(line)
        if line.strip() and not line.lstrip().startswith("#"):  # a comment may open what follows
            last_content = offset
    if inside is not None:
        spans.append((inside, len(text) if text[last_content:].strip() == "" else last_content))
    return spans


def _header_key(line: str) -> list[str] | None:
    match = _HEADER.match(line.rstrip("\r\n"))
    if match is None or len(match.group(1)) != len(match.group(3)):
        return None
    return _parse_key(match.group(2))


def _parse_key(text: str) -> list[str] | None:
    parts: list[str] = []
    pos = 0
    while True:
        match = _KEY_PART.match(text, pos)
        if match is None:
            return None
        bare, basic, literal = match.groups()
        if bare is not None:
            parts.append(bare)
        elif basic is not None:
            try:
                parts.append(json.loads(f'"{basic}"'))
            except ValueError:
                return None
        else:
            parts.append(literal)
        pos = match.end()
        if pos == len(text):
            return parts
        if text[pos] != ".":
            return None
        pos += 1


def _key(part: str) -> str:
    return part if _BARE.fullmatch(part) else json.dumps(part, ensure_ascii=False)


def _value(value: TomlValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return "[" + ", ".join(json.dumps(v, ensure_ascii=False) for v in value) + "]"


def _lookup(data: Any, path: Sequence[str]) -> Any:
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def _with(data: dict[str, Any], path: Sequence[str], values: dict[str, Any]) -> dict[str, Any]:
    copy: dict[str, Any] = json.loads(json.dumps(data, default=str))
    here = copy
    for key in path[:-1]:
        here = here.setdefault(key, {})
    here[path[-1]] = expected_value(values)
    return copy


def _without(data: dict[str, Any], path: Sequence[str]) -> dict[str, Any]:
    copy: dict[str, Any] = json.loads(json.dumps(data, default=str))
    chain = [copy]
    for key in path[:-1]:
        chain.append(chain[-1][key])
    del chain[-1][path[-1]]
    return copy


def _pruned(data: dict[str, Any], path: Sequence[str]) -> str:
    """``data`` as comparable text, the tables along ``path`` that are empty left out (a super-table
    only the removed table made is gone from the file, one with a header of its own stays empty)."""
    copy: dict[str, Any] = json.loads(json.dumps(data, default=str))
    chain = [copy]
    for key in path[:-1]:
        nxt = chain[-1].get(key)
        if not isinstance(nxt, dict):
            break
        chain.append(nxt)
    for depth in range(len(chain) - 1, 0, -1):
        if chain[depth] == {}:
            del chain[depth - 1][path[depth - 1]]
    return json.dumps(copy, sort_keys=True)


def _checked(text: str, expected: dict[str, Any], path: Sequence[str]) -> str:
    table = f"[{'.'.join(path)}]"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TomlEditError(
            f"with {table} edited it would not be valid TOML ({exc}); edit it by hand"
        ) from None
    if _pruned(data, path) != _pruned(expected, path):
        raise TomlEditError(f"{table} is written in a way memd cannot edit safely; edit it by hand")
    return text

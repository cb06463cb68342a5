"""memd's entry in the ``read:`` list of an ``.aider.conf.yml``, edited line by line the way a user
would: every other byte of the file is kept as it was.

memd's line is ``  - "<path>"  # added by memd`` in the file's top-level block list ``read:``; when
the file has no ``read:`` key memd adds ``read:  # added by memd`` as well, and takes both back when
its entry is the only one left. A ``read:`` written on one line (``read: a.md``, ``read: [a, b]``)
or given twice is not edited: the user is told why. Standard library only.
"""

from __future__ import annotations

import json
import re

MARK = "# added by memd"
_KEY_RE = re.compile(r"^read\s*:(.*)$")
_TOP_RE = re.compile(r"^[^\s#-]")


class ReadListError(ValueError):
    """The file's ``read:`` is not one memd edits, and why."""


def _item(path: str, indent: str) -> str:
    return f"{indent}- {json.dumps(path)}  {MARK}"


def _key_lines(lines: list[str]) -> list[int]:
    return [i for i, line in enumerate(lines) if _KEY_RE.match(line)]


def _block_end(lines: list[str], key: int) -> int:
    """The index after the last line of the block under the top-level key at ``key``."""
    end = key + 1
    last = key + 1
    while end < len(lines):
        line = lines[end]
        if _TOP_RE.match(line) or line.startswith("---") or line.startswith("..."):
            break
        end += 1
        if line.strip() and not line.lstrip().startswith("#"):
            last = end
    return last


def _key_value(line: str) -> str:
    match = _KEY_RE.match(line)
    assert match is not None
    rest = match.group(1).strip()
    return "" if rest.startswith("#") else rest


def read_entries(text: str) -> list[str] | None:
    """The entries of the file's top-level ``read:`` (None when it has none): a rough reading, for
    telling whether it hides HOME's list."""
    lines = text.splitlines()
    keys = _key_lines(lines)
    if not keys:
        return None
    value = _key_value(lines[keys[0]])
    if value:
        return [value]
    return [
        line.strip()[1:].split(" #")[0].strip().strip("'\"")
        for line in lines[keys[0] + 1 : _block_end(lines, keys[0])]
        if line.strip().startswith("-")
    ]


def has_entry(text: str, path: str) -> bool:
    return any(line.strip() == _item(path, "") for line in text.splitlines())


def add_entry(text: str, path: str) -> str:
    """``text`` with memd's entry for ``path`` in its ``read:`` list (unchanged when it is there)."""
    if has_entry(text, path):
        return text
    nl = "\r\n" if "\r\n" in text else "\n"
    lines = text.split(nl)
    keys = _key_lines(lines)
    if len(keys) > 1:
        raise ReadListError("it has more than one top-level `read:` key")
    if not keys:
        prefix = text if not text or text.endswith(nl) else text + nl
        return f"{prefix}read:  {MARK}{nl}{_item(path, '  ')}{nl}"
    key = keys[0]
    if _key_value(lines[key]):
        raise ReadListError(
            "its `read:` is written on one line; memd adds its file to a block list only "
            "(`read:` followed by `  - file` lines)"
        )
    end = _block_end(lines, key)
    items = [line for line in lines[key + 1 : end] if line.strip().startswith("-")]
    indent = items[0][: len(items[0]) - len(items[0].lstrip())] if items else "  "
    return nl.join([*lines[:end], _item(path, indent), *lines[end:]])


def remove_entry(text: str, path: str) -> str:
    """``text`` without memd's entry for ``path`` (and without the ``read:`` key memd added, when
    nothing else is left under it)."""
    nl = "\r\n" if "\r\n" in text else "\n"
    lines = text.split(nl)
    kept = [line for line in lines if line.strip() != _item(path, "")]
    keys = _key_lines(kept)
    for key in reversed(keys):
        if kept[key].strip() != f"read:  {MARK}":
            continue
        end = _block_end(kept, key)
        if not any(line.strip() and not line.lstrip().startswith("#") for line in kept[key + 1 : end]):
            del kept[key:end]
    return nl.join(kept)

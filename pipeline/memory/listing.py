"""A scope's files as they are on disk, never following a link: everything under a scope's folder
(``list_scope``), the links of its index ``MEMORY.md`` (``index_links``), and dropping the index
lines of removed files (``drop_index_lines``). The checks after phase 2 (``pipeline.checks``) and the
readers of the memory share them."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.layout import INDEX

_LINK = re.compile(r"\]\(\s*(?:<([^>\n]+)>|([^)\s]+))(?:\s+\"[^\"]*\")?\s*\)")


@dataclass
class ScopeListing:
    files: dict[str, int] = field(default_factory=dict)
    """Regular files, relative path -> size in bytes."""
    symlinks: list[str] = field(default_factory=list)
    hidden: list[str] = field(default_factory=list)
    special: list[str] = field(default_factory=list)


def list_scope(scope_dir: Path) -> ScopeListing:
    """Everything under ``scope_dir``, never following a symlink."""
    out = ScopeListing()

    def walk(directory: Path, prefix: str) -> None:
        with os.scandir(directory) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                rel = f"{prefix}{entry.name}"
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISLNK(st.st_mode):
                    out.symlinks.append(rel)
                elif entry.name.startswith("."):
                    out.hidden.append(rel)
                elif stat.S_ISDIR(st.st_mode):
                    walk(Path(entry.path), rel + "/")
                elif stat.S_ISREG(st.st_mode):
                    out.files[rel] = st.st_size
                else:
                    out.special.append(rel)

    if scope_dir.is_dir():
        walk(scope_dir, "")
    return out


def index_links(text: str) -> list[tuple[int, str]]:
    """``(line number, target)`` of each relative Markdown link in the index."""
    links = []
    for number, line in enumerate(text.splitlines(), start=1):
        for match in _LINK.finditer(line):
            target = (match.group(1) or match.group(2)).split("#", 1)[0]
            if target and "://" not in target and not target.startswith("mailto:"):
                links.append((number, target.removeprefix("./")))
    return links


def drop_index_lines(scope_dir: Path, removed: set[str]) -> None:
    """Remove the lines of ``MEMORY.md`` that link to a removed file."""
    index = scope_dir / INDEX
    if not index.is_file() or index.is_symlink():
        return
    lines = index.read_text(encoding="utf-8").splitlines(keepends=True)
    keep = [line for line in lines if not any(t in removed for _n, t in index_links(line))]
    if len(keep) != len(lines):
        index.write_text("".join(keep), encoding="utf-8")

"""Prompt files: found, loaded, checked, filled, hashed.

Every prompt is a Markdown file named ``<name>.md``. An installed wheel ships them as the
``pipeline/prompts`` directory (hatch force-include); a checkout has them in the repository's
``prompts/``. Placeholders follow ``string.Template``: ``$name`` or ``${name}``, ``$$`` for a
literal dollar. ``load_prompt(name, expected=...)`` refuses a file whose placeholders differ from
what the code fills, so a renamed placeholder fails at start, not in a request; ``Prompt.fill``
refuses missing or unknown values. ``Prompt.sha256`` identifies the text (``llm_calls.prompt_hash``).
"""

from __future__ import annotations

import hashlib
import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import PromptError

_PACKAGE_DIR = Path(__file__).resolve().parent / "prompts"
_REPO_DIR = Path(__file__).resolve().parent.parent / "prompts"


def prompts_dir() -> Path:
    """The installed ``pipeline/prompts`` when present, else the checkout's ``prompts/``."""
    return _PACKAGE_DIR if _PACKAGE_DIR.is_dir() else _REPO_DIR


def placeholders_of(text: str) -> frozenset[str]:
    """The ``$name`` / ``${name}`` placeholders in ``text``; a malformed ``$`` is an error."""
    names: set[str] = set()
    for match in string.Template.pattern.finditer(text):
        if match.group("invalid") is not None:
            line = text.count("\n", 0, match.start()) + 1
            raise PromptError(
                f"malformed placeholder at line {line}: use $name, ${{name}} or $$ for a dollar"
            )
        name = match.group("named") or match.group("braced")
        if name:
            names.add(name)
    return frozenset(names)


@dataclass(frozen=True)
class Prompt:
    name: str
    text: str
    placeholders: frozenset[str]

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    def fill(self, values: Mapping[str, object] | None = None, /, **kw: object) -> str:
        """The text with every placeholder replaced; missing or unknown names raise ``PromptError``."""
        given = {**(values or {}), **kw}
        missing = self.placeholders - given.keys()
        unknown = given.keys() - self.placeholders
        if missing or unknown:
            parts = []
            if missing:
                parts.append("missing " + ", ".join(sorted(missing)))
            if unknown:
                parts.append("unknown " + ", ".join(sorted(unknown)))
            raise PromptError(f"prompt {self.name}: " + "; ".join(parts))
        return string.Template(self.text).substitute({k: str(v) for k, v in given.items()})


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def load_prompt(name: str, expected: Iterable[str] | None = None, *, directory: Path | None = None) -> Prompt:
    """Load ``<name>.md``; with ``expected``, its placeholders must be exactly those names."""
    path = (directory or prompts_dir()) / f"{name}.md"
    try:
        text = _read(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise PromptError(f"prompt {name}: cannot read {path}: {exc.__class__.__name__}") from None
    try:
        found = placeholders_of(text)
    except PromptError as exc:
        raise PromptError(f"prompt {name} ({path}): {exc}") from None
    if expected is not None:
        want = frozenset(expected)
        if found != want:
            extra = ", ".join(sorted(found - want)) or "none"
            lacking = ", ".join(sorted(want - found)) or "none"
            raise PromptError(
                f"prompt {name} ({path}) placeholders do not match the code: unexpected {extra}; missing {lacking}"
            )
    return Prompt(name, text, found)


def combined_hash(*prompts: Prompt) -> str:
    """One hash for the prompts a request was built from (stored as ``llm_calls.prompt_hash``)."""
    h = hashlib.sha256()
    for p in prompts:
        h.update(p.name.encode())
        h.update(b"\0")
        h.update(p.sha256.encode())
    return h.hexdigest()

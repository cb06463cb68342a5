"""What a setting's value may be: its type and bounds, as the one settings table declares them.

Each kind checks a value as the TOML file gives it (``check``: a ``bool`` is a boolean, never the string
``"yes"``), reads one from an environment variable's text (``from_text``), says in words what it
accepts (``shown``, for the configuration reference and the refusals) and writes a value back as TOML
(``toml``, for the template). A refusal is a ``KindError`` whose message names what was expected.
Standard library only: the settings load on every fast path.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import field
from enum import Enum
from pathlib import Path
from typing import Any

from pipeline.frozen import frozen_by_position


class KindError(ValueError):
    """The value is not of the key's kind; the message says what the key takes."""


def toml(value: Any) -> str:
    """``value`` as a TOML literal (the template's and `memd config show`'s)."""
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, tuple | list):
        return "[" + ", ".join(toml(v) for v in value) + "]"
    return json.dumps(str(value))


class Kind:
    """The base of every kind: ``check`` a TOML value, ``from_text`` an environment variable's."""

    shown: str = "a value"

    def check(self, value: Any) -> Any:
        raise NotImplementedError

    def from_text(self, text: str) -> Any:
        return self.check(text)

    def toml(self, value: Any) -> str:
        return toml(value)


@frozen_by_position
class Boolean(Kind):
    shown: str = "true or false"

    def check(self, value: Any) -> bool:
        if isinstance(value, bool):
            return value
        raise KindError("must be true or false")

    def from_text(self, text: str) -> bool:
        word = text.strip().lower()
        if word in ("true", "1", "yes", "on"):
            return True
        if word in ("false", "0", "no", "off"):
            return False
        raise KindError("must be true or false")


def _bounds(ge: float | None, gt: float | None, le: float | None) -> str:
    parts = []
    if gt is not None:
        parts.append(f"> {gt:g}")
    if ge is not None:
        parts.append(f">= {ge:g}")
    if le is not None:
        parts.append(f"<= {le:g}")
    return " and ".join(parts)


@frozen_by_position
class Number(Kind):
    """An integer (``integer=True``) or a finite number, within the bounds given."""

    integer: bool = False
    ge: float | None = None
    gt: float | None = None
    le: float | None = None

    @property
    def shown(self) -> str:  # type: ignore[override]
        what = "an integer" if self.integer else "a number"
        bounds = _bounds(self.ge, self.gt, self.le)
        return f"{what} {bounds}" if bounds else what

    def check(self, value: Any) -> int | float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise KindError(f"must be {self.shown}")
        if self.integer and not isinstance(value, int):
            if not (isinstance(value, float) and value.is_integer()):
                raise KindError(f"must be {self.shown}")
            value = int(value)
        if not self.integer and not math.isfinite(value):
            raise KindError(f"must be {self.shown}")
        if (
            (self.ge is not None and value < self.ge)
            or (self.gt is not None and value <= self.gt)
            or (self.le is not None and value > self.le)
        ):
            raise KindError(f"must be {self.shown}")
        return value if self.integer else float(value)

    def from_text(self, text: str) -> int | float:
        try:
            number: int | float = int(text.strip()) if self.integer else float(text.strip())
        except ValueError:
            raise KindError(f"must be {self.shown}") from None
        return self.check(number)


@frozen_by_position
class Text(Kind):
    """A string within a length, matching a pattern, passing a rule of code (``pipeline.setting_rules``)."""

    min_length: int = 0
    max_length: int | None = None
    pattern: str | None = None
    rule: Callable[[str], str] | None = None
    what: str = "a string"

    @property
    def shown(self) -> str:  # type: ignore[override]
        return self.what

    def check(self, value: Any) -> str:
        if not isinstance(value, str):
            raise KindError(f"must be {self.what}")
        if len(value) < self.min_length:
            raise KindError(
                "must not be empty" if self.min_length == 1 else f"needs {self.min_length}+ characters"
            )
        if self.max_length is not None and len(value) > self.max_length:
            raise KindError(f"must be at most {self.max_length} characters")
        if self.pattern is not None and not re.fullmatch(self.pattern, value):
            raise KindError(f"must match {self.pattern}")
        if self.rule is None:
            return value
        try:
            return self.rule(value)
        except ValueError as exc:
            raise KindError(str(exc)) from None


@frozen_by_position
class Choice(Kind):
    """One of a few words; with ``enum``, the value is held as that enum's member."""

    values: tuple[str, ...]
    enum: type[Enum] | None = None

    @property
    def shown(self) -> str:  # type: ignore[override]
        return "one of " + ", ".join(f'"{v}"' for v in self.values)

    def check(self, value: Any) -> Any:
        if isinstance(value, Enum):
            value = value.value
        if not isinstance(value, str) or value not in self.values:
            raise KindError(f"must be {self.shown}")
        return self.enum(value) if self.enum is not None else value


@frozen_by_position
class PathKind(Kind):
    """A path; a leading ``~`` means the user's home."""

    shown: str = "a path"

    def check(self, value: Any) -> Path:
        if isinstance(value, Path):
            return value.expanduser()
        if not isinstance(value, str) or not value or "\0" in value:
            raise KindError("must be a path")
        return Path(value).expanduser()


@frozen_by_position
class Texts(Kind):
    """A list of strings (held as a tuple); from the environment, a JSON list."""

    shown: str = "a list of strings"

    def check(self, value: Any) -> tuple[str, ...]:
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise KindError("must be a list of strings")
        return tuple(value)

    def from_text(self, text: str) -> tuple[str, ...]:
        try:
            return self.check(json.loads(text))
        except json.JSONDecodeError:
            raise KindError('must be a list of strings (as JSON: ["a", "b"])') from None


@frozen_by_position
class Maybe(Kind):
    """``inner``, or unset (``None``: the key is left out of the file)."""

    inner: Kind = field(default_factory=Kind)

    @property
    def shown(self) -> str:  # type: ignore[override]
        return f"{self.inner.shown}, or unset"

    def check(self, value: Any) -> Any:
        return None if value is None else self.inner.check(value)

    def from_text(self, text: str) -> Any:
        return None if not text.strip() else self.inner.from_text(text)


BOOL = Boolean()
PATH = PathKind()
TEXT = Text()
TEXTS = Texts()
POSITIVE = Number(integer=True, gt=0)
POSITIVE_FLOAT = Number(gt=0)
NON_NEGATIVE_FLOAT = Number(ge=0)

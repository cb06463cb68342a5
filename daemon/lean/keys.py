"""Every key of memd's settings as plain data: its kind and bounds, checked without pydantic.

``KEYS`` names each ``[section] key`` of ``pipeline.settings.Settings`` (a test keeps the two
equal); ``SOURCE_KEYS`` the keys of each ``[sources.<name>]`` table. ``check`` reads what the user
gave (the file's tables, the environment's overrides) and returns the values it is sure the full
loader accepts as they are; anything else (an unknown key, a value of another type, out of range, a
spelling pydantic might coerce) raises ``Unsure`` (so does ``check_related``, the rules between keys), and the caller hands over to the full loader,
which accepts it or names what is wrong. The rules that need code (a store URL, a git remote, a
model endpoint) are ``pipeline.setting_rules``, the ones the schema applies. Standard library only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline import agents, defaults, setting_rules


class Unsure(Exception):
    """The lean reader cannot tell whether the full loader accepts this; the full loader decides."""


_DIGITS = re.compile(r"[0-9]+")
_DECIMAL = re.compile(r"[0-9]+(\.[0-9]+)?")


@dataclass(frozen=True)
class Kind:
    """A key's type and bounds: ``read`` returns the value as the schema would hold it, or raises
    ``Unsure``."""

    read: Callable[[Any], Any]


def _number(value: Any, *, integer: bool) -> float | int:
    if isinstance(value, bool):
        raise Unsure
    if isinstance(value, int):
        return value
    if isinstance(value, float) and not integer and math.isfinite(value):
        return value
    if isinstance(value, str) and (_DIGITS if integer else _DECIMAL).fullmatch(value):
        return int(value) if integer else float(value)
    raise Unsure


def integer(*, ge: int | None = None, gt: int | None = None, le: int | None = None) -> Kind:
    def read(value: Any) -> int:
        n = int(_number(value, integer=True))
        if (ge is not None and n < ge) or (gt is not None and n <= gt) or (le is not None and n > le):
            raise Unsure
        return n

    return Kind(read)


def decimal(*, ge: float | None = None, gt: float | None = None, le: float | None = None) -> Kind:
    def read(value: Any) -> float:
        n = float(_number(value, integer=False))
        if (ge is not None and n < ge) or (gt is not None and n <= gt) or (le is not None and n > le):
            raise Unsure
        return n

    return Kind(read)


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    raise Unsure  # "true" as a string, too: the full loader refuses anything but true or false


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise Unsure
    return value


def _path(value: Any) -> Path:
    if not isinstance(value, str) or not value or "\0" in value:
        raise Unsure
    return Path(value).expanduser()


def _texts(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise Unsure
    return tuple(value)


def text(
    *,
    rule: Callable[[str], str] | None = None,
    min_length: int = 0,
    max_length: int | None = None,
    pattern: str | None = None,
) -> Kind:
    """A string; ``rule`` is the schema's own check (its ``ValueError`` means the loader refuses)."""
    compiled = re.compile(pattern) if pattern is not None else None

    def read(value: Any) -> str:
        found = _text(value)
        too_long = max_length is not None and len(found) > max_length
        if len(found) < min_length or too_long or (compiled is not None and not compiled.fullmatch(found)):
            raise Unsure
        if rule is None:
            return found
        try:
            return rule(found)
        except ValueError:
            raise Unsure from None

    return Kind(read)


def choice(*values: str) -> Kind:
    def read(value: Any) -> str:
        if value not in values:
            raise Unsure
        return str(value)

    return Kind(read)


BOOL = Kind(_boolean)
PATH = Kind(_path)
TEXT = text()
TEXTS = Kind(_texts)
POSITIVE = integer(gt=0)
POSITIVE_FLOAT = decimal(gt=0)

KEYS: Mapping[tuple[str, str], Kind] = {
    ("paths", "memory_dir"): PATH,
    ("paths", "state_db"): text(rule=setting_rules.check_state_db),
    ("paths", "state_dir"): PATH,
    ("memories", "min_rollout_idle_hours"): decimal(ge=0),
    ("memories", "max_rollout_age_days"): POSITIVE_FLOAT,
    ("memories", "max_rollouts_per_run"): POSITIVE,
    ("memories", "max_unused_days"): POSITIVE_FLOAT,
    ("memories", "min_rate_limit_remaining_percent"): decimal(ge=0, le=100),
    ("memories", "disable_on_external_context"): BOOL,
    ("memories", "min_user_messages"): integer(ge=0),
    ("memories", "include_non_interactive"): BOOL,
    ("memories", "exclude_projects"): TEXTS,
    ("memories", "render_token_budget"): POSITIVE,
    ("memories", "summary_token_cap"): POSITIVE,
    ("memories", "topic_file_max_bytes"): POSITIVE,
    ("memories", "max_topic_files"): POSITIVE,
    ("memories", "consolidation_max_turns"): POSITIVE,
    ("memories", "consolidation_token_budget"): POSITIVE,
    ("memories", "max_inputs_per_scope"): POSITIVE,
    ("llm", "base_url"): text(rule=setting_rules.check_base_url),
    ("llm", "api_key_env"): TEXT,
    ("llm", "provider"): choice("anthropic", "bedrock", "vertex"),
    ("llm", "extract_model"): TEXT,
    ("llm", "consolidation_model"): TEXT,
    ("llm", "max_concurrency"): integer(ge=1, le=64),
    ("llm", "batch"): choice("off", "on", "auto"),
    ("llm", "batch_min_pending"): POSITIVE,
    ("llm", "daily_token_budget"): POSITIVE,
    ("llm", "daily_budget_usd"): decimal(ge=0),  # issue 36: the daily budget in dollars
    ("llm", "request_timeout_s"): POSITIVE_FLOAT,
    ("llm", "max_backoff_s"): POSITIVE_FLOAT,
    ("schedule", "scan_interval_minutes"): POSITIVE_FLOAT,
    ("schedule", "consolidate_cooldown_minutes"): decimal(ge=0),
    ("schedule", "shutdown_timeout_s"): POSITIVE_FLOAT,
    ("schedule", "step_deadline_minutes"): POSITIVE_FLOAT,
    ("review", "mode"): choice("auto", "inbox"),
    ("review", "tool_evidence"): choice("mark", "inbox"),
    ("notes", "remember_per_hour"): POSITIVE,
    ("publish", "claude_code"): BOOL,
    ("publish", "gemini"): BOOL,
    ("publish", "codex"): BOOL,
    ("publish", "claude_code_global"): BOOL,
    ("publish", "gemini_global"): BOOL,
    ("publish", "codex_global"): BOOL,
    ("publish", "agents_md"): BOOL,
    ("publish", "opencode_global"): BOOL,
    ("publish", "qwen_code"): BOOL,
    ("publish", "copilot_global"): BOOL,
    ("publish", "codex_summary_token_cap"): POSITIVE,
    ("ui", "enabled"): BOOL,
    ("ui", "host"): text(min_length=1),
    ("ui", "port"): integer(ge=0, le=65535),
    ("ui", "read_only"): BOOL,
    ("sync", "remote"): text(rule=setting_rules.check_remote),
    ("sync", "branch"): text(pattern=setting_rules.BRANCH_PATTERN),
    ("sync", "interval_minutes"): POSITIVE_FLOAT,
    ("sync", "timeout_s"): POSITIVE_FLOAT,
    ("team", "person"): text(max_length=200),
}
"""``(section, key)`` -> its kind, for every key but the ``[sources]`` tables."""

SOURCE_KEYS: Mapping[str, Kind] = {"enabled": BOOL, "root": PATH}
"""The keys of each ``[sources.<name>]`` table."""


def check_related(given: Mapping[tuple[str, ...], Any]) -> None:
    """The rules that tie keys together, on the values given over the defaults; ``Unsure`` when
    one fails (the full loader names it)."""
    idle = given.get(("memories", "min_rollout_idle_hours"), defaults.MIN_ROLLOUT_IDLE_HOURS)
    age = given.get(("memories", "max_rollout_age_days"), defaults.MAX_ROLLOUT_AGE_DAYS)
    try:
        setting_rules.check_idle_inside_age(idle, age)
    except ValueError:
        raise Unsure from None


def check(layer: Mapping[str, Any]) -> dict[tuple[str, ...], Any]:
    """Every value of ``layer`` (TOML-shaped: sections of keys), by ``(section, key)`` or
    ``("sources", name, key)``, as the schema would hold it; ``Unsure`` unless each is sure."""
    out: dict[tuple[str, ...], Any] = {}
    for section, table in layer.items():
        if not isinstance(table, dict):
            raise Unsure
        if section == "sources":
            out.update(_sources(table))
            continue
        for key, value in table.items():
            kind = KEYS.get((section, key))
            if kind is None:
                raise Unsure
            out[(section, key)] = kind.read(value)
    return out


def _sources(tables: Mapping[str, Any]) -> dict[tuple[str, ...], Any]:
    out: dict[tuple[str, ...], Any] = {}
    known = agents.names()
    for name, table in tables.items():
        if name not in known or not isinstance(table, dict):
            raise Unsure
        for key, value in table.items():
            kind = SOURCE_KEYS.get(key)
            if kind is None:
                raise Unsure
            out[("sources", name, key)] = kind.read(value)
    return out

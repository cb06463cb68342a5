"""The one settings table: every key of memd's configuration, declared once.

Each section is a frozen dataclass (``pipeline.frozen``: made without compiling code); each key is one field declared with ``key(default, kind, doc)``:
its name, its type and bounds (a kind of ``pipeline.setting_kinds``), its default, one line saying
what it does; its environment variable is ``MEMD_<SECTION>__<KEY>``. Everything else is derived from
these declarations: the settings object itself (checked when it is made, so a test's settings are as
checked as the daemon's), the loader's refusals (``Settings.model_validate`` names each key that is
wrong and why), `memd config init`'s commented template (``template_text``) and the configuration
reference of the docs (``reference_markdown``). Standard library only, so every fast path (status,
scan's quick check, recall, `memd mcp`) loads the same settings the daemon does, with no second reader.

Loading (the TOML file, environment overrides, where each value came from) lives in
``daemon/config.py``; path defaults follow the XDG base directories and are resolved when the
settings are made, from the environment given (``default_values``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping
from dataclasses import MISSING, field, fields
from enum import Enum, StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Self

from pipeline import defaults, roster, setting_rules
from pipeline.frozen import frozen
from pipeline.setting_kinds import (
    BOOL,
    NON_NEGATIVE_FLOAT,
    PATH,
    POSITIVE,
    POSITIVE_FLOAT,
    TEXT,
    TEXTS,
    Choice,
    Kind,
    KindError,
    Maybe,
    Number,
    Text,
)

ENV_PREFIX = "MEMD_"


class Problem(NamedTuple):
    """One thing wrong with the settings: where (section, key), what, and the value given."""

    loc: tuple[str, ...]
    msg: str
    type: str
    input: Any = None

    def under(self, name: str) -> Problem:
        return self._replace(loc=(name, *self.loc))


class SettingsError(ValueError):
    """The settings are refused; ``problems`` names each key that is wrong and why."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"{'.'.join(p.loc) or 'settings'}: {p.msg}" for p in problems))

    def errors(self) -> list[dict[str, Any]]:
        return [p._asdict() for p in self.problems]


def key(default: Any, kind: Kind, doc: str, *, shown: str | None = None) -> Any:
    """One key of the table: its default, its kind and one line saying what it does. ``shown``: how
    the template and the reference show a default worked out from the environment."""
    metadata = {"kind": kind, "doc": doc, "shown": shown}
    if default is MISSING:
        return field(metadata=metadata)
    return field(default=default, metadata=metadata)


def section(cls: type[Section], doc: str) -> Any:
    """A ``[section]`` of the settings, with the comment the template puts under its header."""
    return field(default_factory=cls, metadata={"section": cls, "doc": doc})


def _json(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return [_json(v) for v in value]
    return value


@frozen
class Section:
    """A table of keys, each checked by its kind when the section is made."""

    def __post_init__(self) -> None:
        problems: list[Problem] = []
        for f in fields(self):
            value = getattr(self, f.name)
            kind = f.metadata.get("kind")
            sub = f.metadata.get("section")
            if kind is not None:
                try:
                    object.__setattr__(self, f.name, kind.check(value))
                except KindError as exc:
                    problems.append(Problem((f.name,), str(exc), "value_error", value))
            elif sub is not None and not isinstance(value, sub):
                problems.append(Problem((f.name,), "must be a table", "type", value))
        if not problems:
            try:
                self._related()
            except ValueError as exc:
                problems.append(Problem((), str(exc), "value_error"))
        if problems:
            raise SettingsError(problems)

    def _related(self) -> None:
        """The rules between this section's keys; a ``ValueError`` says which fails."""

    @classmethod
    def model_validate(cls, data: Any) -> Self:
        """The section from TOML-shaped data; ``SettingsError`` names every key that is wrong."""
        if isinstance(data, cls):
            return data
        if not isinstance(data, Mapping):
            raise SettingsError([Problem((), "must be a table", "type", data)])
        known = {f.name: f for f in fields(cls)}
        problems = [
            Problem((str(k),), "unknown key", "extra_forbidden", v) for k, v in data.items() if k not in known
        ]
        given: dict[str, Any] = {}
        for name, f in known.items():
            if name not in data:
                if f.default is MISSING and f.default_factory is MISSING:
                    problems.append(Problem((name,), "missing", "missing", data))
                continue
            value = data[name]
            sub = f.metadata.get("section")
            if sub is not None:
                try:
                    value = sub.model_validate(value)
                except SettingsError as exc:
                    problems += [p.under(name) for p in exc.problems]
                    continue
            given[name] = value
        required = [n for n, f in known.items() if f.default is MISSING and f.default_factory is MISSING]
        if any(n not in given for n in required):
            raise SettingsError(problems)
        try:
            made = cls(**given)
        except SettingsError as exc:
            raise SettingsError(problems + exc.problems) from None
        if problems:
            raise SettingsError(problems)
        return made

    def model_copy(self, *, update: Mapping[str, Any] | None = None) -> Self:
        """The same section with some keys changed (checked again)."""
        return dataclasses.replace(self, **dict(update or {}))

    def model_dump(self, *, mode: str = "python") -> dict[str, Any]:
        """The section as TOML-shaped data (``mode="json"``: paths and words as strings, lists as lists)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Section | SourcesSettings):
                out[f.name] = value.model_dump(mode=mode)
            else:
                out[f.name] = _json(value) if mode == "json" else value
        return out

    def model_dump_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), sort_keys=True)


# ---------------------------------------------------------------------------------------------------
# [paths]


@frozen
class PathsSettings(Section):
    memory_dir: Path = key(
        MISSING, PATH, "The git repository memd writes memory into.", shown='"$XDG_DATA_HOME/memd/memory"'
    )
    state_db: str = key(
        MISSING,
        Text(rule=setting_rules.check_state_db, what="an SQLAlchemy URL"),
        "The state store, as an SQLAlchemy URL: sqlite:///PATH (default) or postgresql://user@host/db "
        "(PostgreSQL needs the extra: pip install '.[postgres]').",
        shown='"sqlite:///$XDG_STATE_HOME/memd/state.db"',
    )
    state_dir: Path = key(
        MISSING,
        PATH,
        "memd's own files: the redaction key, the instance lock.",
        shown='"$XDG_STATE_HOME/memd"',
    )


# ---------------------------------------------------------------------------------------------------
# [sources.<name>]: one table per agent of pipeline.roster


@frozen
class SourceSettings(Section):
    enabled: bool = key(True, BOOL, "Read this agent's transcripts.")
    root: Path = key(MISSING, PATH, "Where the agent keeps its transcripts.")


class SourcesSettings:
    """``[sources.<name>]``: one table per agent of ``pipeline.roster``, each required (the defaults
    give every one); a name the registry does not know is an unknown source."""

    __slots__ = ("_tables",)
    _tables: dict[str, SourceSettings]

    def __init__(self, **tables: SourceSettings | Mapping[str, Any]) -> None:
        known = roster.names()
        problems = [
            Problem((name,), f"unknown source (memd knows {', '.join(known)})", "unknown_source", value)
            for name, value in tables.items()
            if name not in known
        ]
        problems += [Problem((name,), "missing", "missing", None) for name in known if name not in tables]
        made: dict[str, SourceSettings] = {}
        for name, value in tables.items():
            if name not in known:
                continue
            try:
                made[name] = SourceSettings.model_validate(value)
            except SettingsError as exc:
                problems += [p.under(name) for p in exc.problems]
        if problems:
            raise SettingsError(problems)
        object.__setattr__(self, "_tables", made)

    def __setattr__(self, name: str, value: Any) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    @classmethod
    def model_validate(cls, data: Any) -> SourcesSettings:
        if isinstance(data, cls):
            return data
        if not isinstance(data, Mapping):
            raise SettingsError([Problem((), "must be a table", "type", data)])
        return cls(**{str(k): v for k, v in data.items()})

    def model_copy(self, *, update: Mapping[str, Any] | None = None) -> SourcesSettings:
        return SourcesSettings(**{**self._tables, **dict(update or {})})

    def model_dump(self, *, mode: str = "python") -> dict[str, Any]:
        return {name: table.model_dump(mode=mode) for name, table in self._tables.items()}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SourcesSettings) and self._tables == other._tables

    def __hash__(self) -> int:
        return hash(tuple(self._tables.items()))

    def __repr__(self) -> str:
        return f"SourcesSettings({self._tables!r})"

    def __iter__(self) -> Iterator[str]:
        return iter(self._tables)

    def __getitem__(self, name: str) -> SourceSettings:
        try:
            return self._tables[name]
        except KeyError:
            raise KeyError(f"no source {name!r} in the settings") from None

    def __getattr__(self, name: str) -> SourceSettings:
        tables = object.__getattribute__(self, "_tables")
        if name in tables:
            return tables[name]  # type: ignore[no-any-return]
        raise AttributeError(name)

    def enabled(self) -> dict[str, SourceSettings]:
        """The enabled sources by name, in the registry's order."""
        return {
            name: self._tables[name]
            for name in roster.names()
            if name in self._tables and self._tables[name].enabled
        }


# ---------------------------------------------------------------------------------------------------
# [memories]


@frozen
class MemoriesSettings(Section):
    min_rollout_idle_hours: float = key(
        defaults.MIN_ROLLOUT_IDLE_HOURS,
        NON_NEGATIVE_FLOAT,
        "A session is extracted once it has been idle this long (hours; 0 means idle now).",
    )
    max_rollout_age_days: float = key(
        defaults.MAX_ROLLOUT_AGE_DAYS,
        POSITIVE_FLOAT,
        "Sessions whose last activity is older than this are left alone (days).",
    )
    max_rollouts_per_run: int = key(16, POSITIVE, "At most this many sessions are extracted in one run.")
    max_unused_days: float = key(
        30.0,
        POSITIVE_FLOAT,
        "Extracts no agent has used for this long stop being consolidation inputs (days).",
    )
    min_rate_limit_remaining_percent: float = key(
        defaults.MIN_RATE_LIMIT_REMAINING_PERCENT,
        Number(ge=0, le=100),
        "No new model call starts while the smallest remaining rate-limit share is below this (percent).",
    )
    disable_on_external_context: bool = key(
        False, BOOL, "Leave out sessions that used external context (MCP tools, web search or fetch)."
    )
    min_user_messages: int = key(
        1, Number(integer=True, ge=0), "Sessions with fewer user messages than this are skipped."
    )
    include_non_interactive: bool = key(
        False, BOOL, "Also extract headless runs (an agent run with a prompt and no person at the keyboard)."
    )
    exclude_projects: tuple[str, ...] = key(
        (),
        TEXTS,
        'Projects to leave out, as globs over the project\'s absolute path, e.g. ["~/work/secret-*"].',
    )
    render_token_budget: int = key(
        60_000, POSITIVE, "Budget of one rendered transcript sent for extraction (tokens)."
    )
    summary_token_cap: int = key(2_500, POSITIVE, "Cap of a scope's memory_summary.md (tokens).")
    topic_file_max_bytes: int = key(16_384, POSITIVE, "Cap of one topic file (bytes).")
    max_topic_files: int = key(
        100,
        POSITIVE,
        "Topic files one scope may hold (one index line each, inside the 200-line load cut of an agent's "
        "index); a run that leaves more is refused.",
    )
    consolidation_max_turns: int = key(
        60, POSITIVE, "Model turns one consolidation run (per scope) may take, its repair turn included."
    )
    consolidation_token_budget: int = key(
        1_500_000, POSITIVE, "Tokens (input, output and cache) one consolidation run may spend."
    )
    max_inputs_per_scope: int = key(
        256, POSITIVE, "Most phase-1 extracts one scope consolidates (most used, then newest)."
    )

    def _related(self) -> None:
        setting_rules.check_idle_inside_age(self.min_rollout_idle_hours, self.max_rollout_age_days)


# ---------------------------------------------------------------------------------------------------
# [llm]


class BatchMode(StrEnum):
    off = "off"
    on = "on"
    auto = "auto"


PROVIDERS = ("anthropic", "bedrock", "vertex", "openai")
"""``openai``: any OpenAI-compatible Chat Completions server (Ollama, llama.cpp, vLLM, LM Studio)."""

_BASE_URL = Text(rule=setting_rules.check_base_url, what="an http:// or https:// URL")


@frozen
class EndpointSettings(Section):
    """``[llm.consolidation]``: another endpoint for phase 2 only (each key unset: ``[llm]``'s)."""

    provider: str | None = key(None, Maybe(Choice(PROVIDERS)), "Phase 2's provider; unset: [llm] provider.")
    base_url: str | None = key(None, Maybe(_BASE_URL), "Phase 2's endpoint; unset: [llm] base_url.")
    api_key_env: str | None = key(
        None, Maybe(TEXT), "The variable holding phase 2's API key; unset: [llm] api_key_env."
    )


@frozen
class LLMSettings(Section):
    base_url: str | None = key(
        None,
        Maybe(_BASE_URL),
        'API endpoint, e.g. "https://api.anthropic.com" or "http://127.0.0.1:11434/v1"; unset means the '
        "SDK's default or $ANTHROPIC_BASE_URL.",
    )
    api_key_env: str = key(
        "ANTHROPIC_API_KEY",
        TEXT,
        "The environment variable that holds the API key; empty: the server needs no key (a local one).",
    )
    provider: str = key(
        "anthropic",
        Choice(PROVIDERS),
        "anthropic (default), bedrock or vertex (needs the matching extra), or openai: any "
        "OpenAI-compatible Chat Completions server (Ollama, llama.cpp, vLLM, LM Studio).",
    )
    extract_model: str = key("claude-haiku-5-5", TEXT, "The model of phase 1 (one extraction per session).")
    consolidation_model: str = key(
        "claude-sonnet-5-5", TEXT, "The model of phase 2 (one consolidation run per scope)."
    )
    max_concurrency: int = key(8, Number(integer=True, ge=1, le=64), "Model calls in flight at once.")
    batch: BatchMode = key(
        BatchMode.auto,
        Choice(("off", "on", "auto"), enum=BatchMode),
        "Message Batches for extraction: off, on, or auto (when at least batch_min_pending are pending); "
        "never on an endpoint without them.",
    )
    batch_min_pending: int = key(4, POSITIVE, "With batch = auto, batch when at least this many are pending.")
    daily_token_budget: int | None = key(
        defaults.DAILY_TOKEN_BUDGET,
        Maybe(POSITIVE),
        "Tokens (input + output) memd may spend per UTC day, e.g. 2000000; unset means no budget.",
    )
    daily_budget_usd: float = key(
        defaults.DAILY_BUDGET_USD,
        NON_NEGATIVE_FLOAT,
        "Dollars (estimated at list prices) memd may spend per UTC day; once reached, no new model call "
        "until 00:00 UTC; 0: no budget.",
    )
    request_timeout_s: float = key(300.0, POSITIVE_FLOAT, "The most one model request may take (seconds).")
    max_backoff_s: float = key(
        3600.0, POSITIVE_FLOAT, "Longest wait memd schedules after a rate limit or an overload (seconds)."
    )
    local_only: bool = key(
        False,
        BOOL,
        "Refuse, before any connection, an endpoint (either phase) that is not loopback or a private "
        "address (give an IP address or localhost).",
    )
    input_price_per_mtok: float | None = key(
        None,
        Maybe(NON_NEGATIVE_FLOAT),
        "USD per million input tokens; unset: the price table (0 for a local endpoint).",
    )
    output_price_per_mtok: float | None = key(
        None,
        Maybe(NON_NEGATIVE_FLOAT),
        "USD per million output tokens; unset: the price table (0 for a local endpoint).",
    )
    consolidation: EndpointSettings = section(
        EndpointSettings, "Another provider, endpoint or key for phase 2 only."
    )

    def _related(self) -> None:
        if self.local_only:
            setting_rules.check_local_only(self.endpoints())

    def endpoints(self) -> dict[str, tuple[str, str | None]]:
        """``phase -> (provider, base_url)`` for ``extract`` and ``consolidation``."""
        c = self.consolidation
        return {
            "extract": (self.provider, self.base_url),
            "consolidation": (
                c.provider or self.provider,
                c.base_url if c.base_url is not None else self.base_url,
            ),
        }


# ---------------------------------------------------------------------------------------------------
# [schedule], [review], [notes]


@frozen
class ScheduleSettings(Section):
    scan_interval_minutes: float = key(
        10.0,
        POSITIVE_FLOAT,
        "How often the transcript roots are scanned (file events also bring a scan forward).",
    )
    consolidate_cooldown_minutes: float = key(
        360.0, NON_NEGATIVE_FLOAT, "Pause between two successful consolidations of one scope (minutes)."
    )
    shutdown_timeout_s: float = key(
        30.0,
        POSITIVE_FLOAT,
        "On SIGTERM, how long in-flight work may take to finish before it is handed back.",
    )
    step_deadline_minutes: float = key(
        60.0,
        POSITIVE_FLOAT,
        "A step (scan, extract, consolidate, sync, publish) still running after this long is shown by "
        "`memd status` as stuck (exit status 4), with its name; it is not stopped.",
    )


@frozen
class ReviewSettings(Section):
    mode: str = key(
        "auto",
        Choice(("auto", "inbox")),
        "auto: consolidations commit to main. inbox: each run commits to a branch inbox/<run> for "
        "`memd inbox accept|reject`.",
    )
    tool_evidence: str = key(
        "mark",
        Choice(("mark", "inbox")),
        "A run whose new inputs hold a memory resting on tool output only (what a command printed, a file "
        "or a fetched page said, not the user's words): mark (lands, marked as such) or inbox (waits for review).",
    )


@frozen
class NotesSettings(Section):
    remember_per_hour: int = key(
        defaults.REMEMBER_PER_HOUR,
        POSITIVE,
        "Notes one MCP session (one `memd mcp` server an agent started) may hand memd in an hour through "
        "memory_remember; past it a note is refused.",
    )


# ---------------------------------------------------------------------------------------------------
# [publish]


@frozen
class _PublishBase(Section):
    """``[publish]``: which publish targets are on, and what they read. Each agent declares its own
    keys in its folder (``pipeline.roster.PublishKey``, rows of this table); ``agents_md`` (a project's
    own ``AGENTS.md``, which several agents load) is everyone's."""

    agents_md: bool = key(
        False,
        BOOL,
        "A sentinel block in each project's own AGENTS.md (the user's repository: off unless asked); "
        "the agents that read a project's AGENTS.md load it.",
    )

    def on(self, name: str) -> bool:
        """Whether the publish target ``name`` is turned on."""
        value = getattr(self, name)
        assert isinstance(value, bool), name
        return value

    def number(self, name: str) -> int:
        """The number the key ``name`` holds (``codex_summary_token_cap``...)."""
        value = getattr(self, name)
        assert isinstance(value, int), name
        assert not isinstance(value, bool), name
        return value


def _publish_fields() -> list[tuple[str, type, Any]]:
    """One field per agent's ``[publish]`` key, in the registry's order."""
    return [
        (k.name, bool, key(k.default, BOOL, k.doc))
        if isinstance(k.default, bool)
        else (k.name, int, key(k.default, POSITIVE, k.doc))
        for k in roster.publish_keys()
    ]


if TYPE_CHECKING:

    class PublishSettings(_PublishBase):
        def __init__(self, **keys: Any) -> None: ...

else:
    PublishSettings = frozen(
        type(
            "PublishSettings",
            (_PublishBase,),
            {
                "__module__": __name__,
                "__doc__": _PublishBase.__doc__,
                "__annotations__": {name: kind for name, kind, _ in _publish_fields()},
                **{name: declared for name, _, declared in _publish_fields()},
            },
        )
    )


# ---------------------------------------------------------------------------------------------------
# [ui], [sync], [team]


@frozen
class UISettings(Section):
    enabled: bool = key(False, BOOL, "The daemon serves the web page.")
    host: str = key(defaults.UI_HOST, Text(min_length=1), "The address it listens on.")
    port: int = key(
        defaults.UI_PORT, Number(integer=True, ge=0, le=65535), "The port it listens on (0: any free one)."
    )
    read_only: bool = key(False, BOOL, "Show memory, change nothing (no accept, reject or forget).")


@frozen
class SyncSettings(Section):
    remote: str = key(
        "",
        Text(rule=setting_rules.check_remote, what="a git URL or a path"),
        "A git URL (a path, ssh://, https:// or git@host:owner/repo) the memory repository fetches from and "
        "pushes to; empty: no sync.",
    )
    branch: str = key(
        defaults.SYNC_BRANCH,
        Text(pattern=setting_rules.BRANCH_PATTERN, what="a branch name"),
        "The remote branch the memory repository syncs with.",
    )
    interval_minutes: float = key(
        defaults.SYNC_INTERVAL_MINUTES,
        POSITIVE_FLOAT,
        "How often the daemon fetches and merges between consolidations (each consolidation, forget and "
        "inbox accept syncs too).",
    )
    timeout_s: float = key(
        defaults.SYNC_TIMEOUT_S,
        POSITIVE_FLOAT,
        "The most one git call of `memd sync` against the remote (a fetch, a push) may take, in seconds; then "
        "git and its helpers are killed and the sync ends failed, tried again later.",
    )

    @property
    def enabled(self) -> bool:
        return bool(self.remote)


@frozen
class TeamSettings(Section):
    person: str = key(
        "",
        Text(max_length=200),
        "On a PostgreSQL store several machines share: whose global/ memory this machine's sessions feed. "
        "Give your machines one name (empty: this machine is a person of its own).",
    )


# ---------------------------------------------------------------------------------------------------
# the whole


@frozen
class Settings(Section):
    """Everything memd is told, checked once. Pass it (or one section of it) explicitly."""

    paths: PathsSettings = field(metadata={"section": PathsSettings, "doc": ""})
    sources: SourcesSettings = field(
        metadata={
            "section": SourcesSettings,
            "doc": 'Where each agent keeps its transcripts; "enabled = false" leaves one out.',
        }
    )
    memories: MemoriesSettings = section(
        MemoriesSettings, "Which sessions are read, and the caps of the memory."
    )
    llm: LLMSettings = section(LLMSettings, "The model API both phases call.")
    schedule: ScheduleSettings = section(ScheduleSettings, "When the daemon does what.")
    review: ReviewSettings = section(ReviewSettings, "What waits for your review before it lands.")
    notes: NotesSettings = section(
        NotesSettings, "What agents hand memd mid-session through `memd mcp` (memory_remember)."
    )
    publish: PublishSettings = section(PublishSettings, "Where memory is published for each agent to load.")
    ui: UISettings = section(
        UISettings,
        "The local web page (`memd ui`): the daemon serves it when enabled. It listens on 127.0.0.1 unless "
        "told otherwise, and every request needs the token in the address `memd ui` prints.",
    )
    sync: SyncSettings = section(
        SyncSettings,
        "One memory across machines, through a git remote. Only the memory repository travels: transcripts, "
        "extracts and the redaction key stay on their machine.",
    )
    team: TeamSettings = section(TeamSettings, "Team mode: one PostgreSQL store for several machines.")


def default_values(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The defaults that depend on the environment (home and XDG directories), as TOML-shaped data."""
    import os

    env = os.environ if env is None else env
    return {
        "paths": {
            "memory_dir": str(defaults.memory_dir(env)),
            "state_db": defaults.state_db(env),
            "state_dir": str(defaults.state_dir(env)),
        },
        "sources": roster.default_tables(env),
    }


# ---------------------------------------------------------------------------------------------------
# what derives from the table


class Key(NamedTuple):
    """One key as the table declares it."""

    section: str
    name: str
    kind: Kind
    default: Any
    doc: str
    shown: str | None

    @property
    def dotted(self) -> str:
        return f"{self.section}.{self.name}"

    @property
    def env(self) -> str:
        section = self.section.upper().replace(".", "__").replace("<NAME>", "<AGENT>")
        return f"{ENV_PREFIX}{section}__{self.name.upper()}"

    @property
    def default_toml(self) -> str:
        if self.shown is not None:
            return self.shown
        return "" if self.default is None else self.kind.toml(self.default)


def _keys_of(cls: type[Section], prefix: str) -> Iterator[Key]:
    for f in fields(cls):
        if "kind" in f.metadata:
            default = None if f.default is MISSING else f.default
            yield Key(prefix, f.name, f.metadata["kind"], default, f.metadata["doc"], f.metadata["shown"])


def _subtables(cls: type[Section], name: str, doc: str) -> Iterator[tuple[str, str, tuple[Key, ...]]]:
    """The table ``name`` of ``cls``'s keys, then each table nested in it (``[llm.consolidation]``)."""
    yield name, doc, tuple(_keys_of(cls, name))
    for f in fields(cls):
        sub = f.metadata.get("section")
        if isinstance(sub, type) and issubclass(sub, Section):
            yield from _subtables(sub, f"{name}.{f.name}", f.metadata["doc"])


def tables() -> Iterator[tuple[str, str, tuple[Key, ...] | None]]:
    """Each table of the settings in order: its dotted name, its comment, its keys (None: the
    ``[sources.<name>]`` tables, one per agent, whose keys are ``source_keys``)."""
    for f in fields(Settings):
        sub = f.metadata["section"]
        if isinstance(sub, type) and issubclass(sub, Section):
            yield from _subtables(sub, f.name, f.metadata["doc"])
        else:
            yield f.name, f.metadata["doc"], None


def keys() -> Iterator[Key]:
    """Every key of the table but the ``[sources.<name>]`` tables (``source_keys``), in order."""
    for _name, _doc, found in tables():
        yield from found or ()


def source_keys() -> tuple[Key, ...]:
    """The keys of each ``[sources.<name>]`` table."""
    return tuple(_keys_of(SourceSettings, "sources.<name>"))


def find_key(dotted: str) -> Key | None:
    """The key named ``section.key`` (``llm.consolidation.base_url``, ``sources.<agent>.key``)."""
    parts = dotted.split(".")
    if len(parts) == 3 and parts[0] == "sources":
        return next((k for k in source_keys() if k.name == parts[2]), None)
    return next((k for k in keys() if k.dotted == dotted), None)


def from_environment(layer: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> dict[str, Any]:
    """The ``MEMD_`` overrides (text) read as each key's kind reads text; a value its kind refuses is
    left as it was, for the check to refuse with the key's name."""
    out: dict[str, Any] = {}
    for name, value in layer.items():
        where = (*prefix, str(name))
        if isinstance(value, Mapping):
            out[name] = from_environment(value, where)
            continue
        found = find_key(".".join(where))
        if found is not None and isinstance(value, str):
            try:
                value = found.kind.from_text(value)
            except KindError:
                pass
        out[name] = value
    return out


def _comment(text: str, width: int = 100) -> list[str]:
    import textwrap  # the template only: loading the settings compiles none of its patterns

    return [f"# {line}" for line in textwrap.wrap(text, width - 2)]


TEMPLATE_HEAD = (
    "memd configuration. Every key is shown with its default; uncomment to change it. Any key can also be "
    "set from the environment as MEMD_<SECTION>__<KEY>, e.g. MEMD_MEMORIES__MIN_ROLLOUT_IDLE_HOURS=0 or "
    "MEMD_SOURCES__CODEX__ENABLED=false. Check a file with `memd config validate`; see the effective "
    "values with `memd config show`."
)


def template_text(sources_tables: str) -> str:
    """`memd config init`'s commented file: every key with its line and its default, by table;
    ``sources_tables`` stands for the ``[sources.<name>]`` tables (made from the agents' registry)."""
    out = [*_comment(TEMPLATE_HEAD), ""]
    for name, doc, found in tables():
        if found is None:
            out += [*_comment(doc), sources_tables.rstrip("\n"), ""]
            continue
        out.append(f"[{name}]")
        out += _comment(doc) if doc else []
        for k in found:
            out += _comment(k.doc)
            out.append(f"# {k.name} = {k.default_toml}".rstrip())
        out.append("")
    return "\n".join(out)


def reference_markdown() -> str:
    """The configuration reference of the docs: every key with its kind, its default, its variable
    and its meaning, by table."""
    out: list[str] = []
    for name, doc, found in tables():
        rows = source_keys() if found is None else found
        header = "sources.<agent>" if found is None else name
        table = [
            "| key | takes | default | environment | what it does |",
            "|---|---|---|---|---|",
        ]
        for k in rows:
            default = f"`{k.default_toml}`" if k.default_toml else "unset"
            meaning = k.doc.replace("|", "\\|")
            table.append(f"| `{k.name}` | {k.kind.shown} | {default} | `{k.env}` | {meaning} |")
        out += [f"## `[{header}]`", "", doc, "", *table, ""]
    return "\n".join(out)

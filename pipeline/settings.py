"""The settings schema: one frozen object, one frozen model per TOML section.

Loading (TOML file, environment overrides, error reporting) lives in ``daemon/config.py``; this
module only says what the keys are, what they mean and what values are valid, so pipeline steps
can take the section they need without importing the daemon.

Path defaults follow the XDG base directories (the same layout on Linux and macOS) and are
resolved once, when the settings object is built, from the environment it is given. The defaults
`memd status` reads without this module live in ``pipeline.defaults``; the fields here use them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from pipeline import agents, defaults, setting_rules
from pipeline.vocabulary import SourceName


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)

    @field_validator("*", mode="before")
    @classmethod
    def _true_or_false(cls, value: Any, info: ValidationInfo) -> Any:
        """A yes/no key takes TOML's ``true`` or ``false`` only: ``"yes"``, ``1`` or ``"off"`` are
        refused, not read as pydantic's lax mode would read them."""
        field = cls.model_fields.get(info.field_name or "")
        if field is not None and field.annotation is bool and not isinstance(value, bool):
            raise PydanticCustomError("bool_type", "must be true or false")
        return value


UserPath = Annotated[Path, AfterValidator(lambda p: p.expanduser())]
"""A path in which a leading ``~`` means the user's home."""


class PathsSettings(_Section):
    memory_dir: UserPath
    state_db: str = Field(description="An SQLAlchemy URL: sqlite:///PATH or postgresql://...")
    state_dir: UserPath = Field(
        description="Where memd keeps its own files: the redaction key, the instance lock."
    )

    @field_validator("state_db")
    @classmethod
    def _check_url(cls, value: str) -> str:
        return setting_rules.check_state_db(value)


class SourceSettings(_Section):
    enabled: bool = True
    root: UserPath


class SourcesSettings(_Section):
    """``[sources.<name>]``: one table per agent of ``pipeline.agents``, each required
    (the defaults give every one); a name the registry does not know is an unknown key."""

    model_config = ConfigDict(frozen=True, extra="allow", validate_default=True)
    __pydantic_extra__: dict[str, SourceSettings] = Field(init=False)

    @model_validator(mode="wrap")
    @classmethod
    def _registered(cls, data: Any, handler: ModelWrapValidatorHandler[SourcesSettings]) -> SourcesSettings:
        if isinstance(data, Mapping):
            known = agents.names()
            errors = [
                InitErrorDetails(
                    type=PydanticCustomError(
                        "unknown_source", "unknown source (memd knows {known})", {"known": ", ".join(known)}
                    ),
                    loc=(str(name),),
                    input=value,
                )
                for name, value in data.items()
                if name not in known
            ]
            errors += [
                InitErrorDetails(type="missing", loc=(name,), input=data)
                for name in known
                if name not in data
            ]
            if errors:
                raise ValidationError.from_exception_data(cls.__name__, errors)
        return handler(data)

    def __getitem__(self, name: str) -> SourceSettings:
        extra = self.__pydantic_extra__ or {}
        try:
            return extra[name]
        except KeyError:
            raise KeyError(f"no source {name!r} in the settings") from None

    def enabled(self) -> dict[str, SourceSettings]:
        """The enabled sources by name, in the registry's order."""
        extra = self.__pydantic_extra__ or {}
        return {name: extra[name] for name in agents.names() if name in extra and extra[name].enabled}

    # Typed shorthands for the built-ins (``sources[name]`` reads any source).
    @property
    def claude_code(self) -> SourceSettings:
        return self[SourceName.CLAUDE_CODE]

    @property
    def codex(self) -> SourceSettings:
        return self[SourceName.CODEX]

    @property
    def gemini_cli(self) -> SourceSettings:
        return self[SourceName.GEMINI_CLI]

    @property
    def pi(self) -> SourceSettings:
        return self[SourceName.PI]

    @property
    def opencode(self) -> SourceSettings:
        return self[SourceName.OPENCODE]


NonNegFloat = Annotated[float, Field(ge=0)]
PosInt = Annotated[int, Field(gt=0)]
Percent = Annotated[float, Field(ge=0, le=100)]


class MemoriesSettings(_Section):
    min_rollout_idle_hours: NonNegFloat = defaults.MIN_ROLLOUT_IDLE_HOURS
    max_rollout_age_days: Annotated[float, Field(gt=0)] = defaults.MAX_ROLLOUT_AGE_DAYS
    max_rollouts_per_run: PosInt = 16
    max_unused_days: Annotated[float, Field(gt=0)] = 30.0
    min_rate_limit_remaining_percent: Percent = defaults.MIN_RATE_LIMIT_REMAINING_PERCENT
    disable_on_external_context: bool = False
    min_user_messages: Annotated[int, Field(ge=0)] = 1
    include_non_interactive: bool = False
    exclude_projects: tuple[str, ...] = ()
    render_token_budget: PosInt = Field(
        default=60_000, description="Rendered transcript budget for one extraction request, in tokens."
    )
    summary_token_cap: PosInt = Field(default=2_500, description="Cap of a scope's memory_summary.md.")
    topic_file_max_bytes: PosInt = Field(default=16_384, description="Cap of one topic file.")
    max_topic_files: PosInt = Field(
        default=100,
        description="Topic files one scope may hold (one index line each, inside Claude Code's "
        "200-line load cut); a run that leaves more is refused.",
    )
    consolidation_max_turns: PosInt = Field(
        default=60, description="Model turns one consolidation run may take, its repair turn included."
    )
    consolidation_token_budget: PosInt = Field(
        default=1_500_000, description="Tokens (input, output and cache) one consolidation run may spend."
    )
    max_inputs_per_scope: PosInt = Field(
        default=256, description="Most phase-1 extracts one scope consolidates (most used, then newest)."
    )

    @model_validator(mode="after")
    def _idle_inside_age(self) -> MemoriesSettings:
        setting_rules.check_idle_inside_age(self.min_rollout_idle_hours, self.max_rollout_age_days)
        return self


class BatchMode(StrEnum):
    off = "off"
    on = "on"
    auto = "auto"


class LLMSettings(_Section):
    base_url: str | None = None
    api_key_env: str = "ANTHROPIC_API_KEY"
    provider: Literal["anthropic", "bedrock", "vertex"] = "anthropic"
    extract_model: str = "claude-haiku-5-5"
    consolidation_model: str = "claude-sonnet-5-5"
    max_concurrency: Annotated[int, Field(ge=1, le=64)] = 8
    batch: BatchMode = BatchMode.auto
    batch_min_pending: PosInt = Field(
        default=4, description="With batch = auto, batch when at least this many."
    )
    daily_token_budget: PosInt | None = defaults.DAILY_TOKEN_BUDGET
    # issue 36: the daily budget in dollars, on by default
    daily_budget_usd: Annotated[float, Field(ge=0)] = Field(
        default=defaults.DAILY_BUDGET_USD,
        description="Dollars (estimated, list prices) memd may spend per UTC day; no new call once "
        "reached; 0: no budget.",
    )
    request_timeout_s: Annotated[float, Field(gt=0)] = 300.0
    max_backoff_s: Annotated[float, Field(gt=0)] = 3600.0

    @field_validator("base_url")
    @classmethod
    def _check_base_url(cls, value: str | None) -> str | None:
        return None if value is None else setting_rules.check_base_url(value)


class ScheduleSettings(_Section):
    scan_interval_minutes: Annotated[float, Field(gt=0)] = 10.0
    consolidate_cooldown_minutes: Annotated[float, Field(ge=0)] = 360.0
    shutdown_timeout_s: Annotated[float, Field(gt=0)] = 30.0
    step_deadline_minutes: Annotated[float, Field(gt=0)] = Field(
        default=60.0,
        description="A step (scan, extract, consolidate, sync, publish) still running after this long is "
        "shown by `memd status` as stuck.",
    )


class ReviewSettings(_Section):
    mode: Literal["auto", "inbox"] = "auto"
    tool_evidence: Literal["mark", "inbox"] = Field(
        default="mark",
        description="A run whose new inputs hold a memory resting on tool output only: marked as such "
        "(mark) or held in the inbox for review (inbox).",
    )


class NotesSettings(_Section):
    """``[notes]``: what agents hand memd mid-session through ``memd mcp`` (``memory_remember``)."""

    remember_per_hour: PosInt = Field(
        default=defaults.REMEMBER_PER_HOUR,
        description="Notes one MCP session (one `memd mcp` server) may hand memd in an hour; "
        "past it a note is refused.",
    )


class PublishSettings(_Section):
    claude_code: bool = True
    gemini: bool = True
    codex: bool = False
    claude_code_global: bool = False
    gemini_global: bool = False
    codex_global: bool = False
    agents_md: bool = False
    opencode_global: bool = False
    qwen_code: bool = True
    copilot_global: bool = False
    codex_summary_token_cap: PosInt = 2_500


class UISettings(_Section):
    """``[ui]``: the local web page (`memd ui`), served by the daemon when ``enabled``."""

    enabled: bool = Field(default=False, description="The daemon serves the web page.")
    host: str = Field(default=defaults.UI_HOST, min_length=1, description="The address it listens on.")
    port: Annotated[int, Field(ge=0, le=65535)] = defaults.UI_PORT
    read_only: bool = Field(default=False, description="The page shows memory and changes nothing.")


class SyncSettings(_Section):
    """``[sync]``: the memory repository's git remote (off while ``remote`` is empty)."""

    remote: Annotated[str, AfterValidator(setting_rules.check_remote)] = Field(
        default="", description="A git URL (a path, ssh or https) the memory repository syncs with."
    )
    branch: str = Field(default=defaults.SYNC_BRANCH, pattern=setting_rules.BRANCH_PATTERN)
    interval_minutes: Annotated[float, Field(gt=0)] = defaults.SYNC_INTERVAL_MINUTES
    timeout_s: Annotated[float, Field(gt=0)] = defaults.SYNC_TIMEOUT_S

    @property
    def enabled(self) -> bool:
        return bool(self.remote)


class TeamSettings(_Section):
    """``[team]``: who this machine is for, on a PostgreSQL state store several machines share."""

    person: str = Field(
        default="",
        max_length=200,
        description="Whose global/ memory this machine's sessions feed: give your machines one name "
        "(empty: this machine is a person of its own, so nothing it learns about you reaches another).",
    )


class Settings(_Section):
    """Everything memd is told, validated once. Pass it (or one section of it) explicitly."""

    paths: PathsSettings
    sources: SourcesSettings
    memories: MemoriesSettings = MemoriesSettings()
    llm: LLMSettings = LLMSettings()
    schedule: ScheduleSettings = ScheduleSettings()
    review: ReviewSettings = ReviewSettings()
    notes: NotesSettings = NotesSettings()
    publish: PublishSettings = PublishSettings()
    ui: UISettings = UISettings()
    sync: SyncSettings = SyncSettings()
    team: TeamSettings = TeamSettings()


def default_values(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The defaults that depend on the environment (home and XDG directories), as plain TOML-shaped data."""
    env = os.environ if env is None else env
    return {
        "paths": {
            "memory_dir": str(defaults.memory_dir(env)),
            "state_db": defaults.state_db(env),
            "state_dir": str(defaults.state_dir(env)),
        },
        "sources": agents.default_tables(env),
    }

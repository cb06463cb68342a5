"""The transcript sources memd knows: one entry per agent, and everything derived from them.

An entry (``Source``) names the agent (a ``SourceName`` for the built-ins, any string for a source
registered later, such as a test's toy), the label extraction requests call it by, its default
root (worked out from the environment), its discovery (a standard-library function from
``pipeline.sources.walk``) and its adapter (``"module:Class"``, imported on first use). From the
entries come the ``[sources]`` settings and their defaults (``pipeline.settings``), the
``[sources]`` tables of the config template (`memd config init`), the walk of `memd scan`'s quick
check (``pipeline.scan.probe``), the labels of extraction requests and the adapter the scanner
uses. Adding an agent is one adapter module plus one ``register`` call here.

Standard library only, and no adapter is imported until one is asked for: the quick check and
`memd status` import this module without the parsers, pydantic or structlog.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from pipeline.defaults import home, xdg
from pipeline.sources import walk
from pipeline.sources.walk import Walked, stat_paths
from pipeline.vocabulary import SourceName

if TYPE_CHECKING:
    from pipeline.sources.base import SourceAdapter

Env = Mapping[str, str]
Discover = Callable[[Path], Iterator[str]]
Walk = Callable[[Path], list[Walked]]


class Source(NamedTuple):
    """One agent memd reads transcripts of. (A ``NamedTuple``: a quarter of a frozen dataclass's
    cost to define, which `memd status` pays on every run.)"""

    name: str
    """The key of ``[sources.<name>]`` and the ``source`` stored with each transcript."""
    label: str
    """What the agent is called in words (extraction requests, error messages)."""
    default_root: Callable[[Env], Path]
    """Where the agent keeps its transcripts, from the environment memd runs in."""
    discover: Discover
    """The session files under a root, as path strings; standard library only, never raises."""
    adapter: str | Callable[[], SourceAdapter]
    """``"module:Class"`` (imported on first use) or a factory of the adapter."""
    env: tuple[str, ...] = ()
    """The environment variables ``default_root`` reads besides ``HOME``."""
    enabled: bool = True
    """Whether the source is read when the configuration does not say."""
    walk: Walk | None = None
    """For sessions that are not one file each (rows of a database): every session under a root
    with its change key, in place of one ``stat`` per discovered file."""

    def walked(self, root: Path) -> list[Walked]:
        """What the scan compares with the last one: each session's path and change key."""
        return self.walk(root) if self.walk is not None else stat_paths(self.discover(root))

    def new_adapter(self) -> SourceAdapter:
        """A new adapter (adapters hold only small caches; one per scan is fine)."""
        factory = self.adapter
        if isinstance(factory, str):
            import importlib

            module, _, attr = factory.partition(":")
            factory = cast("Callable[[], SourceAdapter]", getattr(importlib.import_module(module), attr))
        return factory()

    def defaults(self, env: Env) -> dict[str, Any]:
        """The ``[sources.<name>]`` table of the defaults, TOML-shaped."""
        return {"enabled": self.enabled, "root": str(self.default_root(env))}


_SOURCES: dict[str, Source] = {}


def register(source: Source) -> Source:
    """Add ``source``; its name must be new."""
    name = str(source.name)  # a plain string: names are stored, compared and marshalled
    if name in _SOURCES:
        raise ValueError(f"transcript source {name!r} is already registered")
    _SOURCES[name] = source
    return source


def unregister(name: str) -> None:
    """Remove a registered source (a test's toy, once the test is done)."""
    _SOURCES.pop(str(name), None)


def sources() -> tuple[Source, ...]:
    """Every registered source, in registration order (the built-ins first)."""
    return tuple(_SOURCES.values())


def names() -> tuple[str, ...]:
    return tuple(_SOURCES)


def get(name: str) -> Source:
    try:
        return _SOURCES[name]
    except KeyError:
        raise ValueError(f"unknown transcript source: {name!r}") from None


def find(name: str) -> Source | None:
    return _SOURCES.get(name)


def adapter_for(name: str) -> SourceAdapter:
    """A new adapter for the source ``name`` (``ValueError`` for a name nothing registered)."""
    return get(name).new_adapter()


def label_of(name: str) -> str:
    """The source's label; a name nothing registered (an old row) is shown as it is."""
    source = _SOURCES.get(name)
    return source.label if source is not None else name


def default_tables(env: Env) -> dict[str, dict[str, Any]]:
    """The defaults of ``[sources]``: one table per registered source."""
    return {name: source.defaults(env) for name, source in _SOURCES.items()}


def default_env() -> tuple[str, ...]:
    """The environment variables the sources' default roots read besides ``HOME``."""
    return tuple(dict.fromkeys(var for source in _SOURCES.values() for var in source.env))


def codex_home(env: Env) -> Path:
    """``$CODEX_HOME``, by default ``~/.codex``."""
    value = env.get("CODEX_HOME")
    return Path(value) if value else home(env) / ".codex"


# -- the built-ins ----------------------------------------------------------------------------

register(
    Source(
        name=SourceName.CLAUDE_CODE,
        label="Claude Code",
        default_root=lambda env: home(env) / ".claude" / "projects",
        discover=walk.claude_code,
        adapter="pipeline.sources.claude_code:ClaudeCodeAdapter",
    )
)
register(
    Source(
        name=SourceName.CODEX,
        label="Codex CLI",
        default_root=lambda env: codex_home(env) / "sessions",
        discover=walk.codex,
        adapter="pipeline.sources.codex:CodexAdapter",
        env=("CODEX_HOME",),
    )
)
register(
    Source(
        name=SourceName.GEMINI_CLI,
        label="Gemini CLI",
        default_root=lambda env: home(env) / ".gemini" / "tmp",
        discover=walk.gemini_cli,
        adapter="pipeline.sources.gemini_cli:GeminiCliAdapter",
    )
)
register(
    Source(
        name=SourceName.PI,
        label="Pi",
        default_root=lambda env: home(env) / ".pi" / "agent" / "sessions",
        discover=walk.pi,
        adapter="pipeline.sources.pi:PiAdapter",
    )
)
register(
    Source(
        name=SourceName.OPENCODE,
        label="OpenCode",
        default_root=lambda env: xdg(env, "XDG_DATA_HOME", ".local/share") / "opencode",
        discover=walk.opencode,
        adapter="pipeline.sources.opencode:OpenCodeAdapter",
        walk=walk.opencode_sessions,
    )
)


# -- GitHub Copilot CLI: ``$COPILOT_HOME`` (``~/.copilot``) -----------------------------------


def copilot_home(env: Env) -> Path:
    """``$COPILOT_HOME``, by default ``~/.copilot``."""
    value = env.get("COPILOT_HOME")
    return Path(value) if value else home(env) / ".copilot"


register(
    Source(
        name=SourceName.COPILOT_CLI,
        label="GitHub Copilot CLI",
        default_root=lambda env: copilot_home(env) / "session-state",
        discover=walk.copilot_cli,
        adapter="pipeline.sources.copilot_cli:CopilotCliAdapter",
        env=("COPILOT_HOME",),
    )
)


# -- Qwen Code: ``$QWEN_RUNTIME_DIR``, else ``$QWEN_HOME``, else ``~/.qwen`` ----------------------


def qwen_home(env: Env) -> Path:
    """Where Qwen Code keeps its projects (chats and memory): ``$QWEN_RUNTIME_DIR``, else
    ``$QWEN_HOME``, else ``~/.qwen``."""
    value = env.get("QWEN_RUNTIME_DIR") or env.get("QWEN_HOME")
    return Path(value).expanduser() if value else home(env) / ".qwen"


register(
    Source(
        name=SourceName.QWEN_CODE,
        label="Qwen Code",
        default_root=lambda env: qwen_home(env) / "projects",
        discover=walk.qwen_code,
        adapter="pipeline.sources.qwen_code:QwenCodeAdapter",
        env=("QWEN_RUNTIME_DIR", "QWEN_HOME"),
    )
)

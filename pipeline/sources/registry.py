"""The transcript sources memd reads: each agent of ``pipeline.agents`` with its discovery and its
adapter.

An entry (``Source``) carries the agent's facts (name, label, default root, environment: defined in
``pipeline.agents``) with its discovery (a standard-library function from ``pipeline.sources.walk``)
and its adapter (``"module:Class"``, imported on first use). The walk of `memd scan`'s quick check
(``pipeline.scan.probe``), the labels of extraction requests and the adapter the scanner uses come
from here. Adding an agent is its facts in ``pipeline.agents``, a ``SourceName``, a discovery in
``walk.py``, an adapter module and a ``register`` call here.

Standard library only, and no adapter is imported until one is asked for: the quick check and
`memd status` import this module without the parsers, pydantic or structlog.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from pipeline import agents
from pipeline.agents import Agent, Env
from pipeline.sources import walk
from pipeline.sources.walk import Walked, stat_paths
from pipeline.vocabulary import SourceName

if TYPE_CHECKING:
    from pipeline.sources.base import SourceAdapter

Discover = Callable[[Path], Iterator[str]]
Walk = Callable[[Path], list[Walked]]


class Source(NamedTuple):
    """One agent's facts (``pipeline.agents.Agent``) with its discovery and its adapter."""

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

    @property
    def agent(self) -> Agent:
        return Agent(self.name, self.label, self.default_root, self.env, self.enabled)

    def defaults(self, env: Env) -> dict[str, Any]:
        """The ``[sources.<name>]`` table of the defaults, TOML-shaped."""
        return self.agent.defaults(env)


_SOURCES: dict[str, Source] = {}


def register(source: Source) -> Source:
    """Add ``source``; its name must be new."""
    name = str(source.name)  # a plain string: names are stored, compared and marshalled
    if name in _SOURCES:
        raise ValueError(f"transcript source {name!r} is already registered")
    if agents.find(name) != source.agent._replace(name=name):
        agents.register(source.agent)
    _SOURCES[name] = source._replace(name=name)
    return _SOURCES[name]


def unregister(name: str) -> None:
    """Remove a registered source (a test's toy, once the test is done)."""
    _SOURCES.pop(str(name), None)
    agents.unregister(name)


def sources() -> tuple[Source, ...]:
    """Every registered source, in registration order (the built-ins first)."""
    return tuple(_SOURCES.values())


def names() -> tuple[str, ...]:
    return agents.names()


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


label_of = agents.label_of
default_tables = agents.default_tables
default_env = agents.default_env


def _built_in(name: SourceName, discover: Discover, adapter: str, *, walk: Walk | None = None) -> None:
    """Register a built-in agent of ``pipeline.agents`` with its discovery and adapter."""
    agent = agents.find(name)
    assert agent is not None, name
    register(Source(*agent[:3], discover, adapter, agent.env, agent.enabled, walk))


_built_in(SourceName.CLAUDE_CODE, walk.claude_code, "pipeline.sources.claude_code:ClaudeCodeAdapter")
_built_in(SourceName.CODEX, walk.codex, "pipeline.sources.codex:CodexAdapter")
_built_in(SourceName.GEMINI_CLI, walk.gemini_cli, "pipeline.sources.gemini_cli:GeminiCliAdapter")
_built_in(SourceName.PI, walk.pi, "pipeline.sources.pi:PiAdapter")
_built_in(
    SourceName.OPENCODE,
    walk.opencode,
    "pipeline.sources.opencode:OpenCodeAdapter",
    walk=walk.opencode_sessions,
)
_built_in(SourceName.COPILOT_CLI, walk.copilot_cli, "pipeline.sources.copilot_cli:CopilotCliAdapter")
_built_in(SourceName.QWEN_CODE, walk.qwen_code, "pipeline.sources.qwen_code:QwenCodeAdapter")

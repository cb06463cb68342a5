"""The agents memd knows, as every layer below ``pipeline.agents`` sees them: one ``Agent`` record
each (its facts, and its parts named as ``"module:attribute"``), and the list of them.

Each agent is one folder, ``pipeline/agents/<name>/``, whose ``__init__.py`` holds its ``AGENT``;
``pipeline/agents/registry.py`` lists them, one line each. That package sits above every other
layer of ``pipeline/`` (its parts build on the sources' parsers, the publish machinery and the MCP
installers), so the layers below never import it: they ask here, and the list is loaded by name
on first use, as a plugin's entry points are. An agent's parts (transcript adapter, publish
targets) are imported only when a layer asks for them (``load``), so the fast paths (`memd status`,
`memd scan`'s quick check, `memd recall`) read the facts without a parser, pydantic or structlog.

A test's toy is ``register``-ed here and ``unregister``-ed when the test is done. Standard library
only.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import field, replace
from pathlib import Path
from typing import Any, Literal, NamedTuple, Protocol

from pipeline.frozen import frozen_by_position

REGISTRY = "pipeline.agents.registry"
"""The module whose ``AGENTS`` lists the built-in agents, in order (loaded on first use)."""

AGENTS_MD_KEY = "agents_md"
"""The ``[publish]`` key of a project's own ``AGENTS.md`` (everyone's: ``pipeline.settings``)."""
SERVER = "memd"
"""The name memd's MCP server is registered under in every agent."""

Env = Mapping[str, str]
StatKey = tuple[int, int, int, int]  # dev, ino, size, mtime_ns
Walked = tuple[str, StatKey | None, str | None]  # path, stat key, why it could not be used
Discover = Callable[[Path], Iterator[str]]
Walk = Callable[[Path], list[Walked]]
Format = Literal["json", "jsonc", "toml"]
ToolArgs = Mapping[str, tuple[str, ...]]
"""Tool name -> the argument keys that hold what it reads (a path) or runs (a command)."""


class Places(NamedTuple):
    """What a scan knows beyond a source's root, for an agent whose sessions lie in the projects
    themselves (``Agent.walk_places``)."""

    projects: tuple[str, ...] | None
    """The projects memd knows (every session's and scope's project); None: those the last scan
    named (the quick check, which reads no store)."""
    state_dir: Path
    """memd's state folder, where the walk may keep what its searches found."""


WalkPlaces = Callable[[Path, Places], list[Walked]]


class McpClient(NamedTuple):
    """Where an agent keeps its MCP servers, so ``memd mcp install`` can add memd's."""

    name: str
    """What ``memd mcp install`` takes: ``claude-code``, ``codex``..."""
    source: str
    """The agent's name (``Agent.name``)."""
    label: str
    user_file: Callable[[Env], Path]
    project_file: Callable[[Path], Path] | None
    """None: the agent reads MCP servers from the user's file only."""
    format: Format
    container: tuple[str, ...]
    """The keys of the object (JSON) or table (TOML) that holds the servers."""
    entry: Callable[[Sequence[str]], dict[str, Any]]
    """The server's entry, from its command line (an absolute program and its arguments)."""
    project_note: str = ""
    """What the user must do before the agent reads a project's file, when anything."""

    @property
    def path(self) -> tuple[str, ...]:
        return (*self.container, SERVER)


class SessionHook(Protocol):
    """An agent's session-start hook: ``memd hooks install`` puts ``memd recall`` in its settings,
    and recall leaves out what the agent already loads of memd's published copy."""

    def settings_file(self, root: Path) -> Path:
        """The settings file the hook goes in, from the agent's transcripts root."""
        ...

    def loads_project_copy(self, home: Path, project: str) -> bool:
        """Whether the agent (its home folder ``home``) loads memd's copy of ``project``'s memory."""
        ...

    def loads_global_copy(self, home: Path) -> bool:
        """Whether it loads memd's copy of the global scope."""
        ...


@frozen_by_position
class LoadCut:
    """What the agent reads of a file memd writes for it at session start."""

    file: str
    """The name of the file it loads (the plan's other files are opened on demand)."""
    max_lines: int | None = None
    max_bytes: int | None = None
    max_chars: int | None = None
    max_tokens: int | None = None


@frozen_by_position
class PublishKey:
    """One ``[publish]`` key: a publish target's name the user turns on or off, or a number it reads."""

    name: str
    default: bool | int
    doc: str
    """What it turns on, for the commented config file (``memd config init``)."""
    cut: LoadCut | None = None
    """The cut of the file the target of this name writes (None: not a target's name)."""


@frozen_by_position
class Agent:
    """Everything memd knows of one agent (see the module's docstring)."""

    name: str
    """The key of ``[sources.<name>]`` and the ``source`` stored with each transcript."""
    label: str
    """What the agent is called in words (extraction requests, error messages)."""
    default_root: Callable[[Env], Path]
    """Where the agent keeps its transcripts, from the environment memd runs in."""
    discover: Discover
    """The session files under a root, as path strings; standard library only, never raises."""
    adapter: str | Callable[[], Any]
    """Its transcript adapter (a ``pipeline.sources.base.SourceAdapter``): ``"module:Class"``,
    imported on first use, or a factory."""
    env: tuple[str, ...] = ()
    """The environment variables ``default_root`` reads besides ``HOME``."""
    short: str = ""
    """What it is called in a sentence about the files it loads (the label when empty)."""
    enabled: bool = True
    """Whether the source is read when the configuration does not say."""
    walk: Walk | None = None
    """For sessions that are not one file each (rows of a database): every session under a root
    with its change key, in place of one ``stat`` per discovered file."""
    walk_places: WalkPlaces | None = None
    """In place of ``walk`` when the scan can say which projects memd knows (``Places``): for an
    agent that keeps its sessions in the projects, found there and by a cached search of its root."""
    publish: tuple[PublishKey, ...] = ()
    """Its ``[publish]`` keys, with their defaults and the cut of the file each target writes."""
    targets: tuple[str, ...] = ()
    """Its publish targets (each a ``pipeline.publish.targets.base.PublishTarget``), ``"module:Class"``."""
    mcp: McpClient | None = None
    """Where ``memd mcp install`` puts memd's server (None: it cannot be installed there)."""
    reads_agents_md: bool = False
    """It loads a project's ``AGENTS.md`` (the ``agents_md`` target's block names memd's tools
    when it has memd's server)."""
    injected: Callable[[str], str] | None = None
    """Removes the memory and instructions it put into a message's text (None: nothing of its own)."""
    read_tools: ToolArgs = field(default_factory=dict)
    """Its tools that read a file: the argument keys holding the path(s)."""
    shell_tools: ToolArgs = field(default_factory=dict)
    """Its tools that run a shell command: the argument keys holding the command."""
    mcp_prefixes: tuple[str, ...] = ()
    """How its MCP tool names join server and tool besides ``mcp__server__tool``: ``"mcp_"``
    (``mcp_server_tool``) or ``""`` (``server__tool``)."""
    builtin_tools: frozenset[str] | None = None
    """When set, every other tool name is an extension's (``extension:<name>``)."""
    project_hint: str = ""
    """Where its sessions record their project, when not in the usual working directory: said when
    a session's project cannot be told."""
    watched: bool = True
    """Whether the daemon watches its root for file events (False for a root that is only searched,
    bounded, on each scan: Aider's, the home folder, which no watch should cover whole)."""
    hook: str | None = None
    """Its session-start hook (``memd hooks install``), a ``SessionHook`` named
    ``"module:attribute"`` (imported on first use); None: it has none."""
    home: Callable[[Env], Path] | None = None
    """Its own folder (``~/.codex``...), from the environment: absent, the agent is not installed
    here (`memd status` and the page say so). None: its transcripts' default root."""
    off_hint: str = ""
    """Said once (``daemon.service.hints``) on a machine with its sessions while every one of its yes/no
    ``[publish]`` keys is off: how to switch it on. Empty: nothing to say."""

    @property
    def said(self) -> str:
        return self.short or self.label

    @property
    def cli_name(self) -> str:
        """What the command line calls it (``memd mcp install``, ``memd hooks install``)."""
        return self.name.replace("_", "-")

    def home_dir(self, env: Env) -> Path:
        """Its own folder (``home``, else its transcripts' default root)."""
        return (self.home or self.default_root)(env)

    def target_keys(self) -> tuple[str, ...]:
        """The ``[publish]`` keys that turn one of its publish targets on or off (``agents_md`` too
        when it loads a project's ``AGENTS.md``)."""
        own = tuple(k.name for k in self.publish if isinstance(k.default, bool))
        return (*own, AGENTS_MD_KEY) if self.reads_agents_md else own

    def defaults(self, env: Env) -> dict[str, Any]:
        """The ``[sources.<name>]`` table of the defaults, TOML-shaped."""
        return {"enabled": self.enabled, "root": str(self.default_root(env))}


def load(path: str) -> Any:
    """The attribute ``"module:attribute"`` names, its module imported now."""
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


_AGENTS: dict[str, Agent] = {}
_loaded = False


def _all() -> dict[str, Agent]:
    global _loaded
    if not _loaded:
        _loaded = True
        built_in: Sequence[Agent] = load(f"{REGISTRY}:AGENTS")
        toys = dict(_AGENTS)
        _AGENTS.clear()
        for agent in built_in:
            _add(agent)
        for agent in toys.values():
            _add(agent)
    return _AGENTS


def _add(agent: Agent) -> Agent:
    name = str(agent.name)  # a plain string: names are stored, compared and marshalled
    if name in _AGENTS:
        raise ValueError(f"transcript source {name!r} is already registered")
    _AGENTS[name] = replace(agent, name=name)
    return _AGENTS[name]


def register(agent: Agent) -> Agent:
    """Add ``agent`` (a test's toy); its name must be new."""
    _all()
    return _add(agent)


def unregister(name: str) -> None:
    """Remove an agent registered later (a test's toy, once the test is done)."""
    _all().pop(str(name), None)


def agents() -> tuple[Agent, ...]:
    """Every agent, in the registry's order (the built-ins first)."""
    return tuple(_all().values())


def names() -> tuple[str, ...]:
    return tuple(_all())


def find(name: str) -> Agent | None:
    return _all().get(name)


def get(name: str) -> Agent:
    """The agent ``name`` (``KeyError`` for a name nothing registered)."""
    found = _all().get(name)
    if found is None:
        raise KeyError(name)
    return found


def label_of(name: str) -> str:
    """The agent's label; a name nothing registered (an old row) is shown as it is."""
    agent = _all().get(name)
    return agent.label if agent is not None else name


def default_tables(env: Env) -> dict[str, dict[str, Any]]:
    """The defaults of ``[sources]``: one table per agent."""
    return {name: agent.defaults(env) for name, agent in _all().items()}


def default_env() -> tuple[str, ...]:
    """The environment variables the agents' default roots read besides ``HOME``."""
    return tuple(dict.fromkeys(var for agent in _all().values() for var in agent.env))


def publish_keys() -> tuple[PublishKey, ...]:
    """Every ``[publish]`` key of every agent, in the registry's order (each agent's in its own)."""
    return tuple(key for agent in _all().values() for key in agent.publish)


def cuts() -> dict[str, tuple[str, LoadCut]]:
    """Publish target name -> who loads its file (in words) and the cut of that file."""
    return {
        key.name: (agent.said, key.cut)
        for agent in _all().values()
        for key in agent.publish
        if key.cut is not None
    }


def project_hints() -> str:
    """What the agents whose sessions record their project elsewhere say when it cannot be told."""
    return "".join(
        f" (for {agent.label}, {agent.project_hint})" for agent in _all().values() if agent.project_hint
    )


def hooked() -> tuple[Agent, ...]:
    """The agents with a session-start hook."""
    return tuple(agent for agent in _all().values() if agent.hook is not None)


def session_hook(agent: Agent) -> SessionHook:
    """``agent``'s session-start hook, its module imported now."""
    assert agent.hook is not None, agent.name
    hook: SessionHook = load(agent.hook)
    return hook


def agents_md_readers() -> tuple[Agent, ...]:
    """The agents that load a project's ``AGENTS.md``."""
    return tuple(agent for agent in _all().values() if agent.reads_agents_md)

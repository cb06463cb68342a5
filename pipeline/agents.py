"""The agents memd reads transcripts of, as plain facts: each one's name, its label, where it keeps
its transcripts by default (worked out from the environment) and the environment variables that
root reads besides ``HOME``.

The settings (``[sources.<name>]`` and their defaults), the config template and the service unit
read the agents here; ``pipeline.sources.registry`` adds each one's discovery and adapter and
registers an agent added later (a test's toy) here too. An agent's folders are defined here only.
Standard library only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from pipeline.defaults import home, xdg
from pipeline.vocabulary import SourceName

Env = Mapping[str, str]


class Agent(NamedTuple):
    """One agent memd reads transcripts of."""

    name: str
    """The key of ``[sources.<name>]`` and the ``source`` stored with each transcript."""
    label: str
    """What the agent is called in words (extraction requests, error messages)."""
    default_root: Callable[[Env], Path]
    """Where the agent keeps its transcripts, from the environment memd runs in."""
    env: tuple[str, ...] = ()
    """The environment variables ``default_root`` reads besides ``HOME``."""
    enabled: bool = True
    """Whether the source is read when the configuration does not say."""

    def defaults(self, env: Env) -> dict[str, Any]:
        """The ``[sources.<name>]`` table of the defaults, TOML-shaped."""
        return {"enabled": self.enabled, "root": str(self.default_root(env))}


_AGENTS: dict[str, Agent] = {}


def register(agent: Agent) -> Agent:
    """Add ``agent``; its name must be new."""
    name = str(agent.name)  # a plain string: names are stored, compared and marshalled
    if name in _AGENTS:
        raise ValueError(f"transcript source {name!r} is already registered")
    _AGENTS[name] = agent._replace(name=name)
    return _AGENTS[name]


def unregister(name: str) -> None:
    """Remove an agent registered later (a test's toy, once the test is done)."""
    _AGENTS.pop(str(name), None)


def agents() -> tuple[Agent, ...]:
    """Every agent, in registration order (the built-ins first)."""
    return tuple(_AGENTS.values())


def names() -> tuple[str, ...]:
    return tuple(_AGENTS)


def find(name: str) -> Agent | None:
    return _AGENTS.get(name)


def label_of(name: str) -> str:
    """The agent's label; a name nothing registered (an old row) is shown as it is."""
    agent = _AGENTS.get(name)
    return agent.label if agent is not None else name


def default_tables(env: Env) -> dict[str, dict[str, Any]]:
    """The defaults of ``[sources]``: one table per agent."""
    return {name: agent.defaults(env) for name, agent in _AGENTS.items()}


def default_env() -> tuple[str, ...]:
    """The environment variables the agents' default roots read besides ``HOME``."""
    return tuple(dict.fromkeys(var for agent in _AGENTS.values() for var in agent.env))


def codex_home(env: Env) -> Path:
    """``$CODEX_HOME``, by default ``~/.codex``."""
    value = env.get("CODEX_HOME")
    return Path(value) if value else home(env) / ".codex"


def copilot_home(env: Env) -> Path:
    """``$COPILOT_HOME``, by default ``~/.copilot``."""
    value = env.get("COPILOT_HOME")
    return Path(value) if value else home(env) / ".copilot"


def qwen_home(env: Env) -> Path:
    """Where Qwen Code keeps its projects (chats and memory): ``$QWEN_RUNTIME_DIR``, else
    ``$QWEN_HOME``, else ``~/.qwen``."""
    value = env.get("QWEN_RUNTIME_DIR") or env.get("QWEN_HOME")
    return Path(value).expanduser() if value else home(env) / ".qwen"


register(Agent(SourceName.CLAUDE_CODE, "Claude Code", lambda env: home(env) / ".claude" / "projects"))
register(Agent(SourceName.CODEX, "Codex CLI", lambda env: codex_home(env) / "sessions", env=("CODEX_HOME",)))
register(Agent(SourceName.GEMINI_CLI, "Gemini CLI", lambda env: home(env) / ".gemini" / "tmp"))
register(Agent(SourceName.PI, "Pi", lambda env: home(env) / ".pi" / "agent" / "sessions"))
register(
    Agent(SourceName.OPENCODE, "OpenCode", lambda env: xdg(env, "XDG_DATA_HOME", ".local/share") / "opencode")
)
register(
    Agent(
        SourceName.COPILOT_CLI,
        "GitHub Copilot CLI",
        lambda env: copilot_home(env) / "session-state",
        env=("COPILOT_HOME",),
    )
)
register(
    Agent(
        SourceName.QWEN_CODE,
        "Qwen Code",
        lambda env: qwen_home(env) / "projects",
        env=("QWEN_RUNTIME_DIR", "QWEN_HOME"),
    )
)

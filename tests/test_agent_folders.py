"""One folder per agent: an agent's name, label, home folders and environment variables are written
in its folder (``pipeline/agents/<name>/``) and the registry only.

Every Python module of ``daemon/`` and ``pipeline/`` is read as tokens: an identifier or a string
(docstrings aside: prose may name an agent as an example) that holds one of an agent's words outside
its folder and ``pipeline/agents/registry.py`` fails the test, with the file, line and word. The
words are read from the agents themselves (``pipeline.roster``), so an agent added later is checked
from its first line. Other files (the config template) are read whole.
"""

from __future__ import annotations

import functools
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline import roster
from pipeline.roster import Agent

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = ROOT / "pipeline" / "agents" / "registry.py"
HOME = "/nonexistent-home"
BORROWED = {
    ("opencode", ".claude"): "OpenCode reads ~/.claude/CLAUDE.md while its own AGENTS.md is absent",
}
"""(The folder, another agent's word) a folder may hold, each with why: a fact of that folder's
agent about the other one."""


def words(agent: Agent) -> set[str]:
    """What names ``agent``: its name, label and short label, its MCP client's name, the
    environment variables it reads and the folders under the home it keeps its files in."""
    found = {agent.name, agent.label, agent.said, *agent.env}
    env = {"HOME": HOME}
    homes = [agent.default_root(env)]
    if agent.mcp is not None:
        found.add(agent.mcp.name)
        homes.append(agent.mcp.user_file(env))
    for path in homes:
        parts = path.relative_to(HOME).parts if path.is_relative_to(HOME) else ()
        if parts:  # (Aider's root is HOME itself: a bounded search)
            top = parts[0]
            if top.startswith(".") and top not in (".local", ".config"):  # ~/.claude, not ~/.config
                found.add(top)
    return found


def _pattern(word: str) -> re.Pattern[str]:
    """``word`` standing alone: not inside a longer identifier or word (``pi`` in ``api``)."""
    before = r"(?<![\w.-])" if word[0].isalnum() else ""
    return re.compile(rf"{before}{re.escape(word)}(?![\w-])")


def code_texts(path: Path) -> Iterator[tuple[int, str]]:
    """Each identifier and string of a module (docstrings left out), with its line."""
    tokens = list(tokenize.generate_tokens(io.StringIO(path.read_text()).readline))
    previous = tokenize.NEWLINE
    for tok in tokens:
        if tok.type == tokenize.STRING and previous in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            pass  # a docstring (or a string statement): prose
        elif tok.type in (tokenize.NAME, tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", -1)):
            yield tok.start[0], tok.string
        if tok.type not in (tokenize.NL, tokenize.COMMENT):
            previous = tok.type


@functools.cache
def texts() -> tuple[tuple[Path, int, str], ...]:
    """Every identifier and string of daemon/ and pipeline/'s modules, every line of their other
    text files, each with its file and line; the registry left out."""
    found: list[tuple[Path, int, str]] = []
    for top in ("daemon", "pipeline"):
        for path in sorted((ROOT / top).rglob("*")):
            if not path.is_file() or path == REGISTRY or "__pycache__" in path.parts:
                continue
            if path.suffix == ".py":
                found += [(path, line, text) for line, text in code_texts(path)]
            elif path.suffix in (".toml", ".json", ".md", ".txt"):
                found += [(path, line, text) for line, text in enumerate(path.read_text().splitlines(), 1)]
    return tuple(found)


def offenders(agent: Agent) -> list[str]:
    own = ROOT / "pipeline" / "agents" / agent.name
    patterns = [(word, _pattern(word)) for word in sorted(words(agent))]
    return [
        f"{path.relative_to(ROOT)}:{line}: {word!r}"
        for path, line, text in texts()
        if not path.is_relative_to(own)
        for word, pattern in patterns
        if pattern.search(text) and not _borrowed(path, word)
    ]


def _borrowed(path: Path, word: str) -> bool:
    return any(
        path.is_relative_to(ROOT / "pipeline" / "agents" / folder) and word == other
        for folder, other in BORROWED
    )


@pytest.mark.parametrize("agent", roster.agents(), ids=lambda a: a.name)
def test_an_agent_is_named_in_its_folder_and_the_registry_only(agent: Agent) -> None:
    assert offenders(agent) == []


def test_every_agent_has_a_folder_and_one_registry_line() -> None:
    text = REGISTRY.read_text()
    for agent in roster.agents():
        assert (ROOT / "pipeline" / "agents" / agent.name / "__init__.py").is_file()
        assert text.count(f"{agent.name}.AGENT") == 1


def test_the_words_of_an_agent_are_found_where_they_stand() -> None:
    """The check itself: an agent's word in code is found, inside a longer word it is not."""
    pi = _pattern("pi")
    assert pi.search('"pi"')
    assert pi.search("x == pi")
    assert not pi.search("api")
    assert not pi.search("pipeline")
    assert not pi.search("pi_agent")
    assert _pattern(".qwen").search('home / ".qwen"')
    assert not _pattern(".pi").search('"pipeline.pi_x"')
    assert _pattern(".pi").search('"~/.pi/agent"')
    assert _pattern("Qwen Code").search("a Qwen Code session")

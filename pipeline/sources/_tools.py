"""Tool calls across agents: what a call did in one argument, which calls are external context, and
which calls read a file memd published."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from typing import Any

from pipeline import roster
from pipeline.layout import INDEX, SUMMARY
from pipeline.sources._fetches import (
    PACKAGE_DOCS,
    SHELLS,
    is_package_doc,
    program,
    read_arguments,
    shell_fetches,
)
from pipeline.sources.injected import is_memd_topic_path, is_memory_index_path

ESSENTIAL_ARG_MAX_CHARS = 500
ARGS_SUMMARY_MAX_CHARS = 300

WEB_SEARCH = "web_search"
WEB_FETCH = "web_fetch"
MCP_RESOURCES = "mcp_resources"

_ESSENTIAL_KEYS = (
    "command",
    "cmd",
    "file_path",
    "filePath",
    "absolute_path",
    "notebook_path",
    "path",
    "paths",
    "pattern",
    "url",
    "query",
    "queries",
    "description",
    "objective",
    "prompt",
    "skill",
    "agent_name",
    "subject",
)


def _read_tools(source: str) -> Mapping[str, tuple[str, ...]]:
    """The agent's tools that read a file -> the argument keys holding the path(s)."""
    agent = roster.find(source)
    return agent.read_tools if agent is not None else {}


def _shell_tools(source: str) -> Mapping[str, tuple[str, ...]]:
    """The agent's tools that run a shell command -> the argument keys holding the command."""
    agent = roster.find(source)
    return agent.shell_tools if agent is not None else {}


_WEB_SEARCH_NAMES = frozenset(
    {"WebSearch", "web_search", "google_web_search", "websearch", "web_search_call"}
)
_WEB_FETCH_NAMES = frozenset({"WebFetch", "web_fetch", "webfetch"})
_MCP_RESOURCE_NAMES = frozenset(
    {
        "ListMcpResourcesTool",
        "ReadMcpResourceTool",
        "list_mcp_resources",
        "list_mcp_resource_templates",
        "read_mcp_resource",
    }
)
_GEMINI_MCP_DISPLAY_RE = re.compile(r"\(([^()]+) MCP Server\)\s*$")


def cap(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    return text[:max_chars] + f"… [{len(text) - max_chars} more chars]"


def compact_json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return str(value)


def command_text(value: Any) -> str:
    """A shell command as one string; ``["bash", "-lc", "x"]`` is ``x``."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        if len(value) == 3 and program(value[0]) in SHELLS and value[1] in ("-lc", "-c"):
            return str(value[2])
        return shlex.join(value)
    return compact_json(value)


def _patch_files(patch: str) -> str:
    files = re.findall(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", patch, re.M)
    return " ".join(files) if files else patch.strip().split("\n", 1)[0]


def essential_arg(name: str, args: Any) -> str:
    """The argument that says what a call did: the command, the path, the URL, the query."""
    if isinstance(args, str):
        text = _patch_files(args) if "*** Begin Patch" in args else args
        return cap(text, ESSENTIAL_ARG_MAX_CHARS)
    if isinstance(args, dict):
        for key in _ESSENTIAL_KEYS:
            value = args.get(key)
            if value in (None, "", []):
                continue
            text = command_text(value) if key in ("command", "cmd") else value
            if isinstance(text, list) and all(isinstance(v, str) for v in text):
                text = " ".join(text)
            return cap(text if isinstance(text, str) else compact_json(text), ESSENTIAL_ARG_MAX_CHARS)
    return ""


def args_summary(args: Any) -> str:
    if args is None:
        return ""
    return cap(args if isinstance(args, str) else compact_json(args), ARGS_SUMMARY_MAX_CHARS)


def mcp_tag(server: str, tool: str) -> str:
    return f"mcp:{server}/{tool}"


def _split_mcp_name(name: str, source: str) -> tuple[str, str] | None:
    if name.startswith("mcp__"):
        server, sep, tool = name[5:].partition("__")
        return (server, tool) if sep and server and tool else None
    agent = roster.find(source)
    prefixes = agent.mcp_prefixes if agent is not None else ()
    if "mcp_" in prefixes and name.startswith("mcp_"):
        server, sep, tool = name[4:].partition("_")
        return (server, tool) if sep and server and tool else None
    if "" in prefixes and "__" in name and not name.startswith("_"):
        server, _, tool = name.partition("__")
        return (server, tool) if server and tool else None
    return None


def external_tag(
    source: str, name: str, *, display_name: str | None = None, namespace: str | None = None
) -> str | None:
    """What external context a tool call brought in (``mcp:server/tool``, ``web_search``,
    ``web_fetch``, ``mcp_resources``, ``extension:name``), or None for a local tool."""
    if name in _WEB_SEARCH_NAMES:
        return WEB_SEARCH
    if name in _WEB_FETCH_NAMES:
        return WEB_FETCH
    if name in _MCP_RESOURCE_NAMES:
        return MCP_RESOURCES
    if namespace and namespace.startswith("mcp__"):
        return mcp_tag(namespace[5:].strip("_") or namespace, name)
    if display_name:
        match = _GEMINI_MCP_DISPLAY_RE.search(display_name)
        if match:
            server = match.group(1)
            tool = name.removeprefix(f"mcp_{server}_").removeprefix(f"{server}__")
            return mcp_tag(server, tool)
    split = _split_mcp_name(name, source)
    if split:
        return mcp_tag(*split)
    agent = roster.find(source)
    if agent is not None and agent.builtin_tools is not None and name not in agent.builtin_tools:
        return f"extension:{name}"
    return None


def call_external(
    source: str,
    name: str,
    args: Any,
    *,
    display_name: str | None = None,
    namespace: str | None = None,
) -> list[str]:
    """Every kind of external context one call brought in: by the tool (``external_tag``), and by
    what it did: a shell command that fetched from another host or read an installed package's
    documentation, a read tool opening such documentation (``pipeline.sources._fetches``)."""
    tags: list[str] = []
    tag = external_tag(source, name, display_name=display_name, namespace=namespace)
    if tag:
        tags.append(tag)
    keys = _shell_tools(source).get(name)
    if keys is not None and isinstance(args, dict):
        for key in keys:
            if args.get(key) is not None:
                tags.extend(shell_fetches(command_text(args[key])))
                break
    keys = _read_tools(source).get(name)
    if keys is not None and any(is_package_doc(p) for p in _arg_strings(args, keys)):
        tags.append(PACKAGE_DOCS)
    return tags


def _arg_strings(args: Any, keys: tuple[str, ...]) -> list[str]:
    if not isinstance(args, dict):
        return []
    out: list[str] = []
    for key in keys:
        value = args.get(key)
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, list):
            out.extend(v for v in value if isinstance(v, str))
    return out


def _is_memory_path(path: str) -> bool:
    return is_memd_topic_path(path) or is_memory_index_path(path)


def shell_read_paths(command: str) -> list[str]:
    """Memory files a shell command reads with cat/sed/head/tail/less/grep... (best effort)."""
    if "memd-" not in command and INDEX not in command and SUMMARY not in command:
        return []
    return [w for w in read_arguments(command) if _is_memory_path(w)]


def memory_read_request(source: str, name: str, args: Any) -> tuple[str, list[str]] | None:
    """If a call may read memd's files: how (``read_tool`` or ``shell``) and which paths."""
    keys = _read_tools(source).get(name)
    if keys is not None:
        paths = [p for p in _arg_strings(args, keys) if _is_memory_path(p)]
        return ("read_tool", paths) if paths else None
    keys = _shell_tools(source).get(name)
    if keys is not None:
        for key in keys:
            if isinstance(args, dict) and args.get(key) is not None:
                paths = shell_read_paths(command_text(args[key]))
                return ("shell", paths) if paths else None
    return None

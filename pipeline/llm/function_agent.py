"""Phase 2's agent on a server without Anthropic's built-in memory tool: one ordinary function tool.

The tool is named ``memory`` and takes the memory tool's parameters (``command``: view | create |
str_replace | insert | delete | rename, ``path``, ``file_text``, ``old_str``, ``new_str``,
``insert_line``, ``insert_text``, ``old_path``, ``new_path``); each call goes to the same
``ConfinedMemoryTool`` (sandbox and checks) as the built-in tool does, and phase 2 validates,
repairs and checks the result exactly as it does for Claude.

``FunctionMemoryAgent`` runs the loop itself over a ``Transport`` (OpenAI Chat Completions, or an
Anthropic-compatible Messages API with an ordinary tool). A model's answer is never trusted:

- a turn without a tool call ends the run (``done``: what the files say is what phase 2 checks;
  no call at all means nothing changed);
- arguments that are not a JSON object, or a call the tool refuses, go back to the model as an
  error; ``MAX_BAD_TURNS`` turns in a row of nothing but such calls end the run (``malformed``);
- the same call ``MAX_REPEATS`` times in a row ends the run (``loop``);
- the turn limit and the token budget hold as for the built-in tool.
"""

from __future__ import annotations

import json
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog
from anthropic.lib.tools import ToolError

from pipeline.clock import Clock
from pipeline.errors import LLMError
from pipeline.llm.memory_tool import ConfinedMemoryTool
from pipeline.llm.pricing import Usage
from pipeline.llm.protocol import AgentOutcome, TurnHook

log = structlog.get_logger(__name__)

TOOL_NAME = "memory"
MAX_BAD_TURNS = 3
MAX_REPEATS = 3
MAX_OUTPUT_TOKENS = 12_000

MEMORY_DESCRIPTION = (
    "Read and write the memory files under /memories. command is one of: view (path; a folder lists "
    "it, a file shows it), create (path, file_text), str_replace (path, old_str, new_str), insert "
    "(path, insert_line, insert_text), delete (path), rename (old_path, new_path). Paths start with /memories."
)
MEMORY_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {
            "type": "string",
            "enum": ["view", "create", "str_replace", "insert", "delete", "rename"],
        },
        "path": {"type": "string"},
        "file_text": {"type": "string"},
        "old_str": {"type": "string"},
        "new_str": {"type": "string"},
        "insert_line": {"type": "integer"},
        "insert_text": {"type": "string"},
        "old_path": {"type": "string"},
        "new_path": {"type": "string"},
    },
    "required": ["command"],
}


@dataclass(frozen=True)
class ToolCall:
    id: str
    arguments: Any
    """The arguments as the server sent them: a JSON text (OpenAI) or an object (Anthropic)."""


@dataclass(frozen=True)
class Turn:
    text: str
    calls: list[ToolCall]
    usage: Usage
    model: str
    assistant: dict[str, Any]
    """The assistant turn as it goes back into the history."""


class Transport(Protocol):
    """One protocol's way to ask for a turn and to shape the history."""

    async def turn(self, system: str, history: list[dict[str, Any]], max_tokens: int) -> Turn:
        """One request; raises memd's ``LLMError`` (already recorded by the caller's hook)."""
        ...

    def results(self, results: list[tuple[str, str, bool]]) -> list[dict[str, Any]]:
        """History entries for ``(call id, text, is_error)`` tool results."""
        ...

    def add_user_text(self, history: list[dict[str, Any]], text: str) -> None: ...


def parse_arguments(arguments: Any) -> dict[str, Any] | None:
    """The call's arguments as an object without null values, or None when they are not one
    (cut off by ``max_tokens``, not JSON, a list...): whatever ``finish_reason`` said."""
    value = arguments
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments)
        except ValueError:
            return None
    if not isinstance(value, dict):
        return None
    return {k: v for k, v in value.items() if v is not None}


UsageHook = Callable[[Usage, str], Awaitable[None]]
ErrorHook = Callable[[LLMError], Awaitable[None]]


@dataclass
class FunctionMemoryAgent:
    """One consolidation conversation over an ordinary function tool (a ``ConsolidationAgent``)."""

    transport: Transport
    system: str
    tool: ConfinedMemoryTool
    clock: Clock
    max_turns: int
    token_budget: int
    on_usage: UsageHook | None = None
    on_turn: TurnHook | None = None
    rng: random.Random | None = None
    max_output_tokens: int = MAX_OUTPUT_TOKENS
    history: list[dict[str, Any]] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    turns: int = 0
    calls: int = 0
    _bad_turns: int = 0
    _last_call: str | None = None
    _repeats: int = 0

    @property
    def turns_left(self) -> int:
        return max(0, self.max_turns - self.turns)

    async def run(self, text: str, *, turns: int | None = None) -> AgentOutcome:
        """Send ``text`` and run the tool loop for at most ``turns`` (default: what is left)."""
        self.transport.add_user_text(self.history, text)
        limit = min(self.turns_left, turns if turns is not None else self.turns_left)
        final_text = ""
        for _ in range(limit):
            turn = await self.transport.turn(self.system, self.history, self.max_output_tokens)
            self.turns += 1
            self.usage = self.usage + turn.usage
            if self.on_usage is not None:
                await self.on_usage(turn.usage, turn.model)
            self.history.append(turn.assistant)
            final_text = turn.text
            if not turn.calls:
                if self.on_turn is not None:
                    await self.on_turn(self.turns)
                return AgentOutcome("done", self.turns, final_text)
            results, good, stop = await self._answer(turn.calls)
            self.history.extend(self.transport.results(results))
            if self.on_turn is not None:
                await self.on_turn(self.turns)
            self._bad_turns = 0 if good else self._bad_turns + 1
            if stop is not None:
                return AgentOutcome("loop", self.turns, stop)
            if self._bad_turns >= MAX_BAD_TURNS:
                log.warning("agent_malformed_calls", turns=self.turns)
                return AgentOutcome(
                    "malformed",
                    self.turns,
                    f"{MAX_BAD_TURNS} turns in a row of malformed or refused tool calls",
                )
            if self.usage.total_tokens > self.token_budget:
                log.warning("agent_token_budget_spent", turns=self.turns, tokens=self.usage.total_tokens)
                return AgentOutcome("token_budget", self.turns, final_text)
        return AgentOutcome("turn_limit", self.turns, final_text)

    async def _answer(self, calls: list[ToolCall]) -> tuple[list[tuple[str, str, bool]], bool, str | None]:
        """Each call's result; whether any call worked; why to stop (a loop), if so."""
        results: list[tuple[str, str, bool]] = []
        good = False
        for call in calls:
            self.calls += 1
            args = parse_arguments(call.arguments)
            if args is None:
                results.append((call.id, "Error: the arguments must be one JSON object", True))
                continue
            signature = json.dumps(args, sort_keys=True)
            self._repeats = self._repeats + 1 if signature == self._last_call else 1
            self._last_call = signature
            if self._repeats >= MAX_REPEATS:
                log.warning("agent_loop", turns=self.turns)
                results.append((call.id, "Error: the same call again; stopping", True))
                return results, good, f"the model made the same tool call {MAX_REPEATS} times in a row"
            try:
                out = await self.tool.call(args)
            except ToolError as exc:
                results.append((call.id, f"Error: {exc}", True))
                continue
            good = True
            results.append((call.id, out if isinstance(out, str) else json.dumps(out, default=str), False))
        return results, good, None

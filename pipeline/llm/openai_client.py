"""Provider ``openai``: any OpenAI-compatible Chat Completions server (Ollama, llama.cpp, vLLM, LM Studio).

``OpenAIClient`` is an ``LLMClient`` (same ledger, prices, failures, gate) whose calls go to
``/v1/chat/completions`` through the ``openai`` SDK (its own retries off: it would honour any
``retry-after`` uncapped; its logger kept above DEBUG by ``pipeline.llm.client``).

Phase 1 (``create`` with ``output_config``'s schema) asks for structured output in the first way the
endpoint takes, in this order, each refusal learned (``pipeline.llm.endpoint``, kv) so later calls
start at the way that worked:

1. ``response_format`` ``json_schema`` (strict);
2. ``response_format`` ``{"type": "json_object", "schema": ...}`` (llama-cpp-python's own form: it
   answers json_schema with a 500 naming ``response_format``);
3. one forced function call whose arguments are the answer (their text is taken whatever
   ``finish_reason`` says: the caller validates it);
4. plain JSON in the text, the schema given in the system prompt.

A refusal is a 400 or 422, or any error whose message names the feature. Whatever came back is
validated against the schema by phase 1 (one retry, then a recorded failure). Batches are never
used here. Phase 2 runs ``pipeline.llm.function_agent`` with the ``memory`` function tool;
assistant tool-call turns go back with ``content: ""`` (llama-cpp-python answers 500 to null).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import openai

from pipeline.errors import LLMFeatureRefused, LLMRejected
from pipeline.llm import endpoint as endpoints
from pipeline.llm.backoff import api_message
from pipeline.llm.endpoint import Endpoint
from pipeline.llm.function_agent import (
    MEMORY_DESCRIPTION,
    MEMORY_PARAMETERS,
    TOOL_NAME,
    FunctionMemoryAgent,
    ToolCall,
    Turn,
)
from pipeline.llm.memory_tool import ConfinedMemoryTool
from pipeline.llm.messages import SDK_MAX_RETRIES, LLMClient
from pipeline.llm.pricing import Usage
from pipeline.llm.protocol import BatchEntry, BatchInfo, Reply, TurnHook

__all__ = ["MODES", "OpenAIClient", "openai_sdk"]

MODES = ("json_schema", "json_object", "function", "text")
"""Phase 1's ways to ask for structured output, in the order tried."""
EMIT_FUNCTION = "emit_extract"
_REFUSAL_WORDS = {
    "json_schema": ("response_format", "json_schema"),
    "json_object": ("response_format", "json_object"),
    "function": ("tool_choice", "tools", "function"),
    "text": (),
}
_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*)\n\s*```\s*$", re.DOTALL)


def openai_sdk(endpoint: Endpoint, *, key: str, timeout: float, http_client: Any = None) -> Any:
    """The ``AsyncOpenAI`` for ``endpoint`` (no retries of its own)."""
    extra: dict[str, Any] = {} if http_client is None else {"http_client": http_client}
    return openai.AsyncOpenAI(
        api_key=key, base_url=endpoint.base_url, max_retries=SDK_MAX_RETRIES, timeout=timeout, **extra
    )


def usage_of_completion(completion: Any) -> Usage:
    u = getattr(completion, "usage", None)
    if u is None:
        return Usage()
    return Usage(
        input_tokens=int(getattr(u, "prompt_tokens", 0) or 0),
        output_tokens=int(getattr(u, "completion_tokens", 0) or 0),
    )


def _system_text(params: Mapping[str, Any]) -> str:
    system = params.get("system") or ""
    if isinstance(system, str):
        return system
    return "\n\n".join(str(b.get("text", "")) for b in system if isinstance(b, Mapping))


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n\n".join(
        str(b.get("text", "")) for b in content if isinstance(b, Mapping) and b.get("type") == "text"
    )


def chat_messages(params: Mapping[str, Any], *, extra_system: str = "") -> list[dict[str, Any]]:
    """An Anthropic-shaped request's system and (text) messages as Chat Completions messages."""
    system = _system_text(params) + extra_system
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    out += [{"role": m["role"], "content": _content_text(m["content"])} for m in params["messages"]]
    return out


def structured_request(params: Mapping[str, Any], mode: str) -> dict[str, Any]:
    """The Chat Completions request for phase 1's ``params`` in ``mode`` (one of ``MODES``)."""
    schema = params["output_config"]["format"]["schema"]
    request: dict[str, Any] = {"model": params["model"], "max_tokens": params["max_tokens"]}
    if mode == "text":
        hint = (
            "\n\nAnswer with one JSON object and nothing else (no prose, no code fence), matching this "
            "JSON schema:\n" + json.dumps(schema, separators=(",", ":"))
        )
        request["messages"] = chat_messages(params, extra_system=hint)
        return request
    request["messages"] = chat_messages(params)
    if mode == "json_schema":
        request["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "extract", "schema": schema, "strict": True},
        }
    elif mode == "json_object":
        request["response_format"] = {"type": "json_object", "schema": schema}
    else:
        request["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": EMIT_FUNCTION,
                    "description": "Return the extract.",
                    "parameters": schema,
                },
            }
        ]
        request["tool_choice"] = {"type": "function", "function": {"name": EMIT_FUNCTION}}
    return request


def answer_text(completion: Any, mode: str) -> str:
    """The answer's JSON text: a function call's arguments (whatever ``finish_reason`` says), else the
    content without a code fence around it."""
    choices = getattr(completion, "choices", None) or []
    if not choices:
        return ""
    message = choices[0].message
    if mode == "function":
        for call in getattr(message, "tool_calls", None) or []:
            fn = getattr(call, "function", None)
            if fn is not None and fn.name == EMIT_FUNCTION:
                return str(fn.arguments or "")
    text = str(getattr(message, "content", None) or "")
    fenced = _FENCE.match(text)
    return fenced.group(1) if fenced else text


def _finish(completion: Any) -> str | None:
    choices = getattr(completion, "choices", None) or []
    return str(choices[0].finish_reason) if choices and choices[0].finish_reason else None


class OpenAIClient(LLMClient):
    """``LLMClient`` over Chat Completions (see the module docstring)."""

    @property
    def supports_batches(self) -> bool:
        return False

    async def can_batch(self) -> bool:
        return False

    async def _chat(self, request: Mapping[str, Any]) -> Any:
        return await self.sdk.chat.completions.create(**request, timeout=self.settings.llm.request_timeout_s)

    async def create(
        self,
        params: Mapping[str, Any],
        *,
        phase: str,
        job_key: str | None = None,
        prompt_hash: str | None = None,
        attempt: int = 1,
    ) -> Reply:
        model = str(params["model"])
        if "output_config" not in params:
            request: dict[str, Any] = {
                "model": model,
                "max_tokens": params["max_tokens"],
                "messages": chat_messages(params),
            }
            completion = await self._call(request, phase=phase, model=model, job_key=job_key, attempt=attempt)
            return await self._reply(completion, "text", model, phase, job_key, prompt_hash)
        facts = await endpoints.learned(self.store, self.endpoint)
        known = facts.get("structured")
        start = MODES.index(known) if known in MODES else 0
        for mode in MODES[start:]:
            try:
                completion = await self._chat(structured_request(params, mode))
            except openai.APIError as exc:
                status = getattr(exc, "status_code", None)
                said = f"{api_message(exc)} {exc}" if status is not None else ""
                if (
                    mode != "text"
                    and status is not None
                    and endpoints.refusal(status, said, _REFUSAL_WORDS[mode])
                ):
                    # Not an outage: no backoff, no gate; the ledger says what was refused.
                    refused = LLMFeatureRefused(
                        f"{self.endpoint.base_url} refused {mode} ({status})", status=status
                    )
                    await self.record_failure(refused, phase=phase, model=model, job_key=job_key)
                    continue
                raise await self._fail(
                    exc, attempt=attempt, phase=phase, model=model, job_key=job_key
                ) from None
            if mode != known:
                await self.learn(structured=mode)
            return await self._reply(completion, mode, model, phase, job_key, prompt_hash)
        raise AssertionError("unreachable: the text mode raises or answers")

    async def _call(
        self, request: Mapping[str, Any], *, phase: str, model: str, job_key: str | None, attempt: int
    ) -> Any:
        try:
            return await self._chat(request)
        except openai.APIError as exc:
            raise await self._fail(exc, attempt=attempt, phase=phase, model=model, job_key=job_key) from None

    async def _reply(
        self, completion: Any, mode: str, model: str, phase: str, job_key: str | None, prompt_hash: str | None
    ) -> Reply:
        usage = usage_of_completion(completion)
        used = str(getattr(completion, "model", None) or model)
        await self.record_usage(usage, model=used, phase=phase, job_key=job_key, prompt_hash=prompt_hash)
        return Reply(answer_text(completion, mode), usage, used, _finish(completion), completion)

    async def count_tokens(self, params: Mapping[str, Any]) -> int:
        raise LLMRejected("an OpenAI-compatible server does not count tokens")

    async def list_models(self) -> list[str]:
        """The model ids ``/v1/models`` lists (what `memd doctor` checks a model name against)."""
        try:
            page = await self.sdk.models.list()
        except openai.APIError as exc:
            raise await self._fail(exc, attempt=1, phase="doctor", model="", job_key=None) from None
        return [str(m.id) for m in page.data]

    def memory_agent(
        self,
        root: Path,
        *,
        model: str,
        system: str,
        max_bytes_for: Callable[[str], int],
        read_only: Callable[[str], bool],
        max_turns: int,
        token_budget: int,
        phase: str,
        job_key: str | None,
        prompt_hash: str | None = None,
        on_turn: TurnHook | None = None,
    ) -> FunctionMemoryAgent:
        async def on_usage(usage: Usage, used_model: str) -> None:
            await self.record_usage(
                usage, model=used_model, phase=phase, job_key=job_key, prompt_hash=prompt_hash
            )

        return FunctionMemoryAgent(
            transport=ChatTransport(self, model=model, phase=phase, job_key=job_key),
            system=system,
            tool=ConfinedMemoryTool(root, max_bytes_for=max_bytes_for, read_only=read_only),
            clock=self.clock,
            max_turns=max_turns,
            token_budget=token_budget,
            on_usage=on_usage,
            on_turn=on_turn,
            rng=self.rng,
        )

    # -- no Message Batches on this protocol

    async def submit_batch(self, requests: Sequence[tuple[str, Mapping[str, Any]]], *, phase: str) -> str:
        raise LLMRejected("an OpenAI-compatible server has no Message Batches")

    async def batch_info(self, batch_id: str, *, phase: str) -> BatchInfo:
        raise LLMRejected("an OpenAI-compatible server has no Message Batches")

    async def recent_batches(self, *, phase: str, limit: int = 50) -> list[BatchInfo]:
        return []

    async def batch_results(self, batch_id: str, *, phase: str) -> list[BatchEntry]:
        raise LLMRejected("an OpenAI-compatible server has no Message Batches")


class ChatTransport:
    """Turns of ``pipeline.llm.function_agent`` over Chat Completions with the ``memory`` function."""

    def __init__(self, client: OpenAIClient, *, model: str, phase: str, job_key: str | None) -> None:
        self.client = client
        self.model = model
        self.phase = phase
        self.job_key = job_key
        self._ids = 0

    async def turn(self, system: str, history: list[dict[str, Any]], max_tokens: int) -> Turn:
        request = {
            "model": self.model,
            "max_tokens": max_tokens,
            "messages": [{"role": "system", "content": system}, *history],
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": TOOL_NAME,
                        "description": MEMORY_DESCRIPTION,
                        "parameters": MEMORY_PARAMETERS,
                    },
                }
            ],
            "tool_choice": "auto",
        }
        completion = await self.client._call(
            request, phase=self.phase, model=self.model, job_key=self.job_key, attempt=1
        )
        choices = getattr(completion, "choices", None) or []
        message = choices[0].message if choices else None
        text = str(getattr(message, "content", None) or "")
        calls: list[ToolCall] = []
        wire: list[dict[str, Any]] = []
        for call in getattr(message, "tool_calls", None) or []:
            fn = getattr(call, "function", None)
            if fn is None:
                continue
            self._ids += 1
            cid = str(getattr(call, "id", None) or f"call_{self._ids}")
            arguments = str(fn.arguments or "")
            wire.append(
                {"id": cid, "type": "function", "function": {"name": str(fn.name), "arguments": arguments}}
            )
            if fn.name == TOOL_NAME:
                calls.append(ToolCall(cid, arguments))
            else:
                calls.append(ToolCall(cid, None))  # a tool that does not exist: answered as malformed
        assistant: dict[str, Any] = {
            "role": "assistant",
            "content": text,
        }  # never null: llama-cpp-python 500s
        if wire:
            assistant["tool_calls"] = wire
        usage = usage_of_completion(completion)
        return Turn(text, calls, usage, str(getattr(completion, "model", None) or self.model), assistant)

    def results(self, results: list[tuple[str, str, bool]]) -> list[dict[str, Any]]:
        return [{"role": "tool", "tool_call_id": cid, "content": text} for cid, text, _bad in results]

    def add_user_text(self, history: list[dict[str, Any]], text: str) -> None:
        history.append({"role": "user", "content": text})

"""`memd doctor`'s probes: can each phase run on its endpoint? No store, no ledger; a few tiny calls.

``diagnose(settings, env)`` probes phase 1's endpoint (``[llm]``) and phase 2's (``[llm.consolidation]``
over ``[llm]``) and returns one ``PhaseReport`` each: reachable, model present, structured output,
tool calling, batches, and a one-line verdict naming the setting to change when the phase cannot run.
Phase 1 needs the server reachable, its model and some way to structured output; phase 2 needs the
server reachable, its model and tool calling. ``local_only`` is enforced before any connection (the
settings refuse such an endpoint already; ``LocalOnlyRefused`` for settings made in code).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pipeline.errors import LocalOnlyRefused
from pipeline.llm.endpoint import Endpoint, endpoint_for, refusal
from pipeline.llm.function_agent import MEMORY_DESCRIPTION, MEMORY_PARAMETERS, TOOL_NAME
from pipeline.settings import Settings

PROBE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
    "additionalProperties": False,
}
PROBE_MAX_TOKENS = 200
PROBE_TIMEOUT_S = 60.0
KEYS = {
    "extract": {"url": "[llm] base_url", "model": "[llm] extract_model", "section": "[llm]"},
    "consolidation": {
        "url": "[llm.consolidation] base_url (or [llm] base_url)",
        "model": "[llm] consolidation_model",
        "section": "[llm.consolidation]",
    },
}


@dataclass
class PhaseReport:
    phase: str
    endpoint: Endpoint
    model: str
    reachable: str = "not probed"
    model_present: str = "not probed"
    structured: str = "not probed"
    tools: str = "not probed"
    batches: str = "not probed"
    verdict: str = ""
    ok: bool = False
    problems: list[str] = field(default_factory=list)

    def rows(self) -> list[tuple[str, str]]:
        return [
            ("endpoint", f"{self.endpoint.provider} {self.endpoint.base_url or '(the provider default)'}"),
            ("model", self.model),
            ("reachable", self.reachable),
            ("model present", self.model_present),
            ("structured output", self.structured),
            ("tool calling", self.tools),
            ("batches", self.batches),
            ("verdict", self.verdict),
        ]

    def as_json(self) -> dict[str, Any]:
        return {"phase": self.phase, "ok": self.ok, **{k.replace(" ", "_"): v for k, v in self.rows()}}


def _said(exc: BaseException) -> str:
    from pipeline.llm.backoff import api_message

    status = getattr(exc, "status_code", None)
    if status is None:
        cause = exc.__cause__ or exc.__context__
        return f"{type(exc).__name__}: {cause or exc}"
    return f"{status}: {api_message(exc)}"


def _connection_error(exc: BaseException) -> bool:
    return getattr(exc, "status_code", None) is None


async def _probe_openai(report: PhaseReport, sdk: Any) -> None:
    import openai

    keys = KEYS[report.phase]
    try:
        page = await sdk.models.list()
        listed = [str(m.id) for m in page.data]
        report.reachable = "yes"
        if report.model in listed:
            report.model_present = "yes"
        else:
            report.model_present = f"no (the server lists: {', '.join(listed[:8]) or 'nothing'})"
            report.problems.append(
                f"the server does not have the model {report.model!r}: set {keys['model']} to one it lists"
            )
    except openai.APIError as exc:
        if _connection_error(exc):
            report.reachable = f"no ({_said(exc)})"
            report.problems.append(f"the server is unreachable: check that it runs, or set {keys['url']}")
            return
        report.reachable = "yes"
        report.model_present = f"unknown (/v1/models answered {_said(exc)})"
    report.batches = "not used (OpenAI-compatible server)"
    messages = [{"role": "user", "content": 'Answer with the JSON object {"ok": true}.'}]
    from pipeline.llm.openai_client import MODES

    for mode in MODES:
        request: dict[str, Any] = {
            "model": report.model,
            "max_tokens": PROBE_MAX_TOKENS,
            "messages": messages,
        }
        if mode == "json_schema":
            request["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "probe", "schema": PROBE_SCHEMA, "strict": True},
            }
        elif mode == "json_object":
            request["response_format"] = {"type": "json_object", "schema": PROBE_SCHEMA}
        elif mode == "function":
            request["tools"] = [
                {"type": "function", "function": {"name": "answer", "parameters": PROBE_SCHEMA}}
            ]
            request["tool_choice"] = {"type": "function", "function": {"name": "answer"}}
        try:
            await sdk.chat.completions.create(**request, timeout=PROBE_TIMEOUT_S)
        except openai.APIError as exc:
            status = getattr(exc, "status_code", None)
            if (
                mode != "text"
                and status is not None
                and refusal(status, _said(exc), ("response_format", "tool"))
            ):
                continue
            report.structured = f"no ({_said(exc)})"
            break
        report.structured = {
            "json_schema": "yes (response_format json_schema)",
            "json_object": "yes (response_format json_object with a schema)",
            "function": "yes (a forced function call)",
            "text": "prompted only (JSON in the text, validated; small models fail more often)",
        }[mode]
        break
    try:
        completion = await sdk.chat.completions.create(
            model=report.model,
            max_tokens=PROBE_MAX_TOKENS,
            messages=[{"role": "user", "content": "Call the memory tool to view the folder /memories."}],
            tools=[
                {
                    "type": "function",
                    "function": {
                        "name": TOOL_NAME,
                        "description": MEMORY_DESCRIPTION,
                        "parameters": MEMORY_PARAMETERS,
                    },
                }
            ],
            tool_choice="auto",
            timeout=PROBE_TIMEOUT_S,
        )
    except openai.APIError as exc:
        report.tools = f"no ({_said(exc)})"
        return
    choices = completion.choices or []
    called = (
        [c for c in (choices[0].message.tool_calls or []) if getattr(c, "function", None)] if choices else []
    )
    report.tools = (
        "yes" if called else "no (the model answered without calling the tool: the server ignores `tools`)"
    )


async def _probe_anthropic(report: PhaseReport, sdk: Any) -> None:
    import anthropic

    keys = KEYS[report.phase]
    try:
        page = await sdk.models.list(limit=100)
        listed = [str(m.id) for m in page.data]
        report.reachable = "yes"
        if report.model in listed:
            report.model_present = "yes"
        else:
            report.model_present = f"no (the server lists: {', '.join(listed[:8]) or 'nothing'})"
            report.problems.append(
                f"the server does not have the model {report.model!r}: set {keys['model']} to one it lists"
            )
    except anthropic.APIError as exc:
        if _connection_error(exc):
            report.reachable = f"no ({_said(exc)})"
            report.problems.append(f"the server is unreachable: check that it runs, or set {keys['url']}")
            return
        if getattr(exc, "status_code", None) in (401, 403):
            report.reachable = f"yes, but the key is refused ({_said(exc)})"
            report.problems.append(f"the server refuses the key: set {keys['section']} api_key_env")
            return
        report.reachable = "yes"
        report.model_present = f"unknown (/v1/models answered {_said(exc)})"
    try:
        await sdk.messages.batches.list(limit=1)
        report.batches = "yes"
    except anthropic.APIError as exc:
        report.batches = f"no ({_said(exc)}): extraction calls directly"
    user = [{"role": "user", "content": 'Answer with the JSON object {"ok": true}.'}]
    try:
        await sdk.messages.create(
            model=report.model,
            max_tokens=PROBE_MAX_TOKENS,
            messages=user,
            output_config={"format": {"type": "json_schema", "schema": PROBE_SCHEMA}},
        )
        report.structured = "yes (output_config)"
    except anthropic.APIError as exc:
        try:
            await sdk.messages.create(
                model=report.model,
                max_tokens=PROBE_MAX_TOKENS,
                messages=user,
                tools=[{"name": "answer", "input_schema": PROBE_SCHEMA}],
                tool_choice={"type": "tool", "name": "answer"},
            )
            report.structured = f"yes (a forced tool call; output_config refused: {_said(exc)})"
        except anthropic.APIError as exc2:
            report.structured = f"no ({_said(exc2)})"
    try:
        message = await sdk.messages.create(
            model=report.model,
            max_tokens=PROBE_MAX_TOKENS,
            messages=[{"role": "user", "content": "Call the memory tool to view the folder /memories."}],
            tools=[{"name": TOOL_NAME, "description": MEMORY_DESCRIPTION, "input_schema": MEMORY_PARAMETERS}],
        )
    except anthropic.APIError as exc:
        report.tools = f"no ({_said(exc)})"
        return
    called = any(getattr(b, "type", None) == "tool_use" for b in message.content)
    report.tools = "yes" if called else "no (the model answered without calling the tool)"


def _verdict(report: PhaseReport) -> None:
    keys = KEYS[report.phase]
    needs_structured = report.phase == "extract"
    if report.reachable.startswith("yes") and not report.problems:
        if needs_structured and not report.structured.startswith(("yes", "prompted")):
            report.problems.append(
                f"no structured output from {report.model!r}: set {keys['model']} or {keys['url']} "
                "to a model and server that answer JSON"
            )
        if not needs_structured and not report.tools.startswith("yes"):
            report.problems.append(
                "no tool calling: phase 2 needs a model and server that call tools (llama.cpp: --jinja; "
                f"Ollama: a model with tool support); set {keys['section']} provider/base_url or {keys['model']}"
            )
    report.ok = not report.problems
    name = "phase 1 (extraction)" if report.phase == "extract" else "phase 2 (consolidation)"
    report.verdict = f"{name} can run" if report.ok else f"{name} cannot run: {report.problems[0]}"


async def diagnose(settings: Settings, env: Mapping[str, str]) -> list[PhaseReport]:
    """One report per phase (see the module docstring)."""
    from pipeline.llm.messages import quiet_sdk_loggers

    quiet_sdk_loggers()
    llm = settings.llm
    reports = []
    for phase, model in (("extract", llm.extract_model), ("consolidation", llm.consolidation_model)):
        endpoint = endpoint_for(llm, phase)
        report = PhaseReport(phase, endpoint, model)
        reports.append(report)
        if llm.local_only and not endpoint.local:
            raise LocalOnlyRefused(
                f"[llm] local_only = true refuses the {phase} endpoint {endpoint.base_url!r}"
            )
        if endpoint.provider in ("bedrock", "vertex"):
            report.reachable = report.model_present = report.structured = report.tools = report.batches = (
                f"not probed (provider {endpoint.provider})"
            )
            report.ok = True
            report.verdict = "not probed: memd uses the provider's Claude models as on Anthropic's API"
            continue
        key = "no-key"
        if endpoint.api_key_env:
            found = env.get(endpoint.api_key_env)
            if not found:
                report.problems.append(
                    f"the variable {endpoint.api_key_env} is unset: set it, or {KEYS[phase]['section']} api_key_env"
                )
                _verdict(report)
                continue
            key = found
        if endpoint.provider == "openai":
            import openai

            sdk: Any = openai.AsyncOpenAI(
                api_key=key, base_url=endpoint.base_url, max_retries=0, timeout=PROBE_TIMEOUT_S
            )
            try:
                await _probe_openai(report, sdk)
            finally:
                await sdk.close()
        else:
            import anthropic

            base_url = endpoint.base_url or env.get("ANTHROPIC_BASE_URL") or None
            sdk = anthropic.AsyncAnthropic(
                api_key=key, base_url=base_url, max_retries=0, timeout=PROBE_TIMEOUT_S
            )
            try:
                await _probe_anthropic(report, sdk)
            finally:
                await sdk.close()
        _verdict(report)
    return reports


def render(reports: list[PhaseReport]) -> str:
    lines = []
    for report in reports:
        lines.append("Phase 1 (extraction)" if report.phase == "extract" else "Phase 2 (consolidation)")
        lines += [f"  {name:<18} {value}" for name, value in report.rows()]
        lines.append("")
    return "\n".join(lines)


def as_json(reports: list[PhaseReport]) -> str:
    return json.dumps([r.as_json() for r in reports], indent=2)

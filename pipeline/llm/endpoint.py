"""Each phase's endpoint, what memd learned about it, and what a call there costs. No SDK.

- ``Endpoint``: one phase's provider, ``base_url`` and key variable (``[llm]``, and
  ``[llm.consolidation]`` over it for phase 2); ``endpoint_for(llm, phase)``.
- Learned facts (kv ``llm_endpoints``, by endpoint): a server that refused Message Batches (404),
  Anthropic's built-in tool types or ``output_config`` (400), or ``response_format`` json_schema,
  is remembered, so the next run goes the way that works without asking again; `memd status` and
  `memd doctor` show them. ``learned(store, endpoint)`` / ``learn(store, endpoint, now=, **facts)``.
- ``refusal(status, message, words)``: whether an error means "this server does not do that"
  (400, 422, or any status whose message names the feature: llama-cpp-python answers json_schema
  with a 500 naming ``response_format``).
- ``price_for(llm, endpoint)``: the configured price, else 0 on a local endpoint, else the table's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pipeline.endpoint_facts import KV_ENDPOINTS, describe
from pipeline.llm.pricing import Price, Usage, cost_usd, known_model
from pipeline.setting_rules import local_host
from pipeline.settings import LLMSettings
from pipeline.store import Store, kv

__all__ = [
    "KV_ENDPOINTS",
    "Endpoint",
    "describe",
    "endpoint_for",
    "learn",
    "learned",
    "phase_cost",
    "price_for",
    "refusal",
    "split",
]

ANTHROPIC_HOSTS = ("api.anthropic.com",)
PHASES = ("extract", "consolidation")


@dataclass(frozen=True)
class Endpoint:
    phase: str
    provider: str
    base_url: str | None
    api_key_env: str

    @property
    def key(self) -> str:
        """The endpoint's name in the learned facts."""
        return f"{self.provider} {self.base_url or '(default)'}"

    @property
    def local(self) -> bool:
        return self.base_url is not None and local_host(self.base_url)

    @property
    def anthropic_hosted(self) -> bool:
        """Anthropic's own API (batches, built-in tools, ``output_config`` are known to work there)."""
        if self.provider != "anthropic":
            return self.provider in ("bedrock", "vertex")
        if self.base_url is None:
            return True
        from urllib.parse import urlsplit

        return (urlsplit(self.base_url).hostname or "") in ANTHROPIC_HOSTS


def endpoint_for(llm: LLMSettings, phase: str) -> Endpoint:
    """``phase``'s endpoint: ``extract`` is ``[llm]``; ``consolidation`` is ``[llm.consolidation]`` over it."""
    if phase == "extract":
        return Endpoint(phase, llm.provider, llm.base_url, llm.api_key_env)
    c = llm.consolidation
    return Endpoint(
        phase,
        c.provider or llm.provider,
        c.base_url if c.base_url is not None else llm.base_url,
        c.api_key_env if c.api_key_env is not None else llm.api_key_env,
    )


def split(llm: LLMSettings) -> bool:
    """Whether phase 2 talks to another endpoint than phase 1."""
    one, two = endpoint_for(llm, "extract"), endpoint_for(llm, "consolidation")
    return (one.provider, one.base_url, one.api_key_env) != (two.provider, two.base_url, two.api_key_env)


def price_for(llm: LLMSettings, endpoint: Endpoint, model: str) -> Price | None:
    """The price of a call to ``model`` there: ``[llm] *_price_per_mtok`` when set; 0 on a local
    endpoint for a model the price table does not know (a model running here: a Claude model behind
    a local address is a proxy to the paid API, priced as such); else None (the table)."""
    if llm.input_price_per_mtok is not None or llm.output_price_per_mtok is not None:
        return Price(llm.input_price_per_mtok or 0.0, llm.output_price_per_mtok or 0.0)
    if endpoint.local and not known_model(model):
        return Price(0.0, 0.0)
    return None


def phase_cost(llm: LLMSettings, phase: str, model: str, usage: Usage, *, batch: bool = False) -> float:
    """What ``usage`` on ``model`` costs at ``phase``'s endpoint (``price_for``, else the table)."""
    return cost_usd(model, usage, batch=batch, price=price_for(llm, endpoint_for(llm, phase), model))


def refusal(status: int | None, message: str, words: Iterable[str], *, any_400: bool = True) -> bool:
    """Whether an error says the server does not support a feature: any error whose message names
    it (one of ``words``), or (``any_400``: an OpenAI-compatible server, which answers
    nothing else to a field it does not take) a 400 or 422."""
    text = message.lower()
    if any(w.lower() in text for w in words):
        return True
    return any_400 and status in (400, 422)


async def learned(store: Store, endpoint: Endpoint) -> dict[str, Any]:
    """What memd learned about ``endpoint`` (empty when nothing)."""
    value = await kv.get(store, KV_ENDPOINTS, {})
    found = value.get(endpoint.key) if isinstance(value, dict) else None
    return dict(found) if isinstance(found, dict) else {}


async def learn(store: Store, endpoint: Endpoint, *, now: datetime, **facts: Any) -> None:
    """Record ``facts`` about ``endpoint`` (merged with what was known)."""
    value = await kv.get(store, KV_ENDPOINTS, {})
    table = dict(value) if isinstance(value, dict) else {}
    current = table.get(endpoint.key)
    merged = {**(current if isinstance(current, dict) else {}), **facts, "learned_at": now.isoformat()}
    table[endpoint.key] = merged
    await kv.put(store, KV_ENDPOINTS, table, now=now)

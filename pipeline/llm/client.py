"""The model client, built from settings: one per phase endpoint (``pipeline.llm.endpoint``).

``build_client(settings, store=..., clock=..., env=os.environ)`` gives an ``LLMClient``
(``pipeline.llm.messages``; ``OpenAIClient`` for provider ``openai``; a ``SplitClient`` when
``[llm.consolidation]`` names another endpoint for phase 2); without the key it raises ``NoAPIKey``
naming the variable (work that needs no model, such as scanning, goes on), and for an endpoint
``[llm] local_only`` forbids ``LocalOnlyRefused``, before any connection. ``LLMClient`` satisfies
``pipeline.llm.protocol.ModelClient``, the type its callers know it by; ``LLMClient.sdk`` (the
``AsyncAnthropic``) stays inside this package: phase 2's agent is made by ``memory_agent``.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anthropic

from pipeline.clock import Clock
from pipeline.errors import LLMError, LocalOnlyRefused, NoAPIKey
from pipeline.llm import endpoint as endpoints
from pipeline.llm.endpoint import Endpoint, endpoint_for
from pipeline.llm.messages import SDK_MAX_RETRIES, LLMClient, RateLimitRecorder, reply_of
from pipeline.llm.protocol import BatchEntry, BatchInfo, ConsolidationAgent, Reply
from pipeline.settings import Settings
from pipeline.store import Store

__all__ = [
    "SDK_MAX_RETRIES",
    "BatchEntry",
    "BatchInfo",
    "LLMClient",
    "Reply",
    "SplitClient",
    "build_client",
    "reply_of",
]


NO_KEY = "no-key"
"""What the SDK sends as its key when ``api_key_env`` is empty (a local server that needs none)."""


def build_client(
    settings: Settings,
    *,
    store: Store,
    clock: Clock,
    env: Mapping[str, str],
    http_client: Any = None,
    rng: random.Random | None = None,
) -> LLMClient:
    """The client for ``settings.llm``: phase 1's endpoint, and ``[llm.consolidation]``'s for phase 2
    when it names another. Raises ``NoAPIKey`` when a key variable is named but unset, and
    ``LocalOnlyRefused`` (before any connection) for an endpoint ``local_only`` forbids."""
    llm = settings.llm
    made = [
        _build_one(
            settings,
            endpoint_for(llm, phase),
            store=store,
            clock=clock,
            env=env,
            http_client=http_client,
            rng=rng,
        )
        for phase in (("extract", "consolidation") if endpoints.split(llm) else ("extract",))
    ]
    if len(made) == 1:
        return made[0]
    return SplitClient(made[0], made[1])


def _build_one(
    settings: Settings,
    endpoint: Endpoint,
    *,
    store: Store,
    clock: Clock,
    env: Mapping[str, str],
    http_client: Any,
    rng: random.Random | None,
) -> LLMClient:
    llm = settings.llm
    if llm.local_only and not endpoint.local:
        raise LocalOnlyRefused(
            f"[llm] local_only = true refuses the {endpoint.phase} endpoint {endpoint.base_url or endpoint.provider!r}"
        )
    key: str | None = NO_KEY
    if endpoint.api_key_env:
        key = env.get(endpoint.api_key_env)
        if not key and endpoint.provider in ("anthropic", "openai"):
            raise NoAPIKey(endpoint.api_key_env)
    if endpoint.provider == "openai":
        from pipeline.llm.openai_client import OpenAIClient, openai_sdk

        sdk = openai_sdk(endpoint, key=key or NO_KEY, timeout=llm.request_timeout_s, http_client=http_client)
        return OpenAIClient(sdk, settings, store=store, clock=clock, rng=rng, endpoint=endpoint)
    recorder = RateLimitRecorder(store, clock)
    common: dict[str, Any] = {
        "max_retries": SDK_MAX_RETRIES,
        "timeout": llm.request_timeout_s,
        "middleware": [recorder],
    }
    if http_client is not None:
        common["http_client"] = http_client
    if endpoint.provider == "anthropic":
        base_url = endpoint.base_url or env.get("ANTHROPIC_BASE_URL") or None
        sdk = anthropic.AsyncAnthropic(api_key=key, base_url=base_url, open_telemetry=False, **common)
    elif endpoint.provider == "bedrock":
        try:
            region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
            sdk = anthropic.AsyncAnthropicBedrock(aws_region=region, base_url=endpoint.base_url, **common)
        except ImportError as exc:
            raise LLMError(
                f"provider bedrock needs the extra: pip install 'memd-daemon[bedrock]' ({exc})"
            ) from None
        except (ValueError, anthropic.AnthropicError) as exc:
            raise LLMError(f"cannot set up provider bedrock: {exc}") from None
    else:
        try:
            vertex: dict[str, Any] = {
                k: v
                for k, v in (
                    ("region", env.get("CLOUD_ML_REGION")),
                    ("project_id", env.get("ANTHROPIC_VERTEX_PROJECT_ID")),
                )
                if v
            }
            sdk = anthropic.AsyncAnthropicVertex(base_url=endpoint.base_url, **vertex, **common)
        except ImportError as exc:
            raise LLMError(
                f"provider vertex needs the extra: pip install 'memd-daemon[vertex]' ({exc})"
            ) from None
        except (ValueError, anthropic.AnthropicError) as exc:
            raise LLMError(f"cannot set up provider vertex: {exc}") from None
    return LLMClient(sdk, settings, store=store, clock=clock, rng=rng, endpoint=endpoint)


class SplitClient(LLMClient):
    """Phase 1 on one endpoint, phase 2 (``memory_agent``) on another (``[llm.consolidation]``)."""

    def __init__(self, extract: LLMClient, consolidation: LLMClient) -> None:
        super().__init__(
            extract.sdk,
            extract.settings,
            store=extract.store,
            clock=extract.clock,
            rng=extract.rng,
            endpoint=extract.endpoint,
        )
        self.extract = extract
        self.consolidation = consolidation

    @property
    def supports_batches(self) -> bool:
        return self.extract.supports_batches

    async def can_batch(self) -> bool:
        return await self.extract.can_batch()

    async def create(self, params: Mapping[str, Any], **kw: Any) -> Reply:
        return await self.extract.create(params, **kw)

    def memory_agent(self, root: Path, **kw: Any) -> ConsolidationAgent:
        return self.consolidation.memory_agent(root, **kw)

    async def aclose(self) -> None:
        try:
            await self.extract.aclose()
        finally:
            await self.consolidation.aclose()

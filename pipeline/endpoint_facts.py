"""What memd learned about a model endpoint, as stored (kv ``llm_endpoints``) and shown. Standard library only.

``pipeline.llm.endpoint`` records the facts (a server that refused Message Batches, built-in tool
types, ``output_config``, or the way to structured output that worked); `memd status` and the page
read them with ``describe`` without importing the model client.
"""

from __future__ import annotations

from typing import Any

KV_ENDPOINTS = "llm_endpoints"
"""kv key: ``{endpoint name: {fact: value, "learned_at": iso time}}``."""

FACT_LABELS = {
    "batches": "Message Batches",
    "builtin_tools": "built-in tool types",
    "output_config": "output_config",
    "structured": "structured output",
}


def describe(facts: dict[str, Any]) -> str:
    """One line of learned facts, e.g. ``no Message Batches, structured output: json_object``."""
    parts = []
    for name, label in FACT_LABELS.items():
        value = facts.get(name)
        if value is False:
            parts.append(f"no {label}")
        elif isinstance(value, str):
            parts.append(f"{label}: {value}")
    return ", ".join(parts) or "nothing refused"


def described(value: Any) -> dict[str, str]:
    """The stored kv value as ``{endpoint name: describe(facts)}`` (anything malformed left out)."""
    if not isinstance(value, dict):
        return {}
    return {str(k): describe(v) for k, v in value.items() if isinstance(v, dict)}

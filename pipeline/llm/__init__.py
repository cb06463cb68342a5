"""Everything that talks to the model API. The ``anthropic`` SDK is imported under this package only.

- ``client``: ``build_client(settings, store=, clock=, env=) -> LLMClient`` (calls, batches, usage, cost)
- ``ratelimit``: recorded rate-limit headers and ``gate_state(store, settings, now) -> GateState``
- ``backoff``: SDK errors -> ``LLMUnavailable(not_before)`` / ``LLMRejected`` / ``LLMAuthFailed``
- ``pricing``: the per-model price table and ``cost_usd``

Importing this package does not import the SDK; ``pipeline.llm.client`` does.
"""

from pipeline.llm.pricing import Usage, cost_usd
from pipeline.llm.ratelimit import GateState, gate_state

__all__ = ["GateState", "Usage", "cost_usd", "gate_state"]

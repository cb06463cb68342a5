"""Everything that talks to the model API. The ``anthropic`` SDK is imported under this package only.

- ``protocol``: ``ModelClient`` (what callers may use of the client) and its plain answers; no SDK
- ``client``: ``build_client(settings, store=, clock=, env=) -> LLMClient`` (calls, batches, usage, cost,
  phase 2's agent), which satisfies ``ModelClient``
- ``agent``: the consolidation agent's tool loop; ``memory_tool``: its confined memory tool
- ``ratelimit``: recorded rate-limit headers and ``gate_state(store, settings, now) -> GateState``
- ``backoff``: SDK errors -> ``LLMUnavailable(not_before)`` / ``LLMRejected`` / ``LLMAuthFailed``
- ``pricing``: the per-model price table and ``cost_usd``

Importing this package (or ``protocol``) does not import the SDK; ``client``, ``agent`` and
``memory_tool`` do.
"""

from pipeline.llm.pricing import Usage, cost_usd
from pipeline.llm.ratelimit import gate_state
from pipeline.store.read.gate import GateState

__all__ = ["GateState", "Usage", "cost_usd", "gate_state"]

"""Transcript sources: the machinery every agent's adapter is built on (``SourceAdapter`` in
``base``; the JSONL driver, the collector, tool calls, injected context), each agent's adapter
living in its folder (``pipeline/agents/<name>/transcripts.py``).

``registry`` gives the agents of ``pipeline.roster`` as sources (name, label, default root,
discovery, adapter), and ``registry.adapter_for(source)`` returns the adapter the scanner uses for a
configured source; ``walk`` finds session files with the standard library only (this package's
``__init__`` imports nothing, and the registry imports an adapter only when one is asked for, so
`memd scan`'s quick check can use both without the adapters); ``injected`` strips injected memory
and instructions.
"""

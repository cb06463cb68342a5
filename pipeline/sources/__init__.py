"""Transcript sources: one adapter per agent behind ``SourceAdapter`` (see ``base``).

``registry.adapter_for(source)`` returns the adapter the scanner uses for a configured source;
``walk`` finds each agent's session files with the standard library only (this package's
``__init__`` imports nothing, so `memd scan`'s quick check can use ``walk`` without the adapters);
``injected`` strips injected memory and instructions.
"""

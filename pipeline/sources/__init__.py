"""Transcript sources: one adapter per agent behind ``SourceAdapter`` (see ``base``).

``registry`` holds one entry per agent (name, label, default root, discovery, adapter) from which
the settings, the config template, discovery and request labels are derived, and
``registry.adapter_for(source)`` returns the adapter the scanner uses for a configured source;
``walk`` finds each agent's session files with the standard library only (this package's
``__init__`` imports nothing, and the registry imports an adapter only when one is asked for, so
`memd scan`'s quick check can use both without the adapters);
``injected`` strips injected memory and instructions.
"""

"""The checks memd runs in code after phase 2, whatever the model wrote: a scope's files, caps,
index and secret gate (``validate``), memd's own provenance (``provenance``), what the person
decided (``guard``), duplicates (``duplicates``), what each scope is for (``scope_rules``) and
topics that restate tool output (``tool_marks``). Each finding is one sentence for the agent's repair
turn.
"""

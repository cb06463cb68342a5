"""`memd mcp`: a stdio MCP server (the official ``mcp`` SDK) agents ask mid-session.

``front.py`` reads stdio first and answers an agent's opening from ``frozen.json`` (made by
``frozen.py``) while the SDK loads; ``server.py`` builds the server and registers the tools of every module in ``TOOL_MODULES``
(each has ``register(server, deps)``); ``deps.py`` is what tools share (the settings' paths, the
session's project, the memory, the redactor, the use recorder); ``memory.py`` keeps the search
index fresh; ``outbound.py`` is what every answer passes through (redacted, fenced as data,
capped); ``uses.py`` reads and records uses of topics in the state store.
"""

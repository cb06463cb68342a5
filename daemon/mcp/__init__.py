"""`memd mcp`: a stdio MCP server (the official ``mcp`` SDK) agents ask mid-session.

``stdio.py`` holds the process's stdin and stdout for the SDK's own stdio transport (private fds,
bounded lines, one writer, the process's end); ``server.py`` builds the server and registers the
tools of every module in ``TOOL_MODULES`` (each has ``register(server, deps)``); ``deps.py`` is
what tools share (the settings' paths, the session's project, the memory, the redactor, the use
recorder); ``memory.py`` keeps the search index fresh; ``outbound.py`` is what every answer passes
through (redacted, fenced as data, capped); ``uses.py`` reads and records uses of topics in the
state store.
"""

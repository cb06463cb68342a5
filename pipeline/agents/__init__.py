"""The agents memd knows, one package each (``pipeline/agents/<name>/``): everything memd knows of
an agent lives in its folder, and ``registry.py`` lists them, one line each.

A folder holds the agent's ``AGENT`` (``pipeline.roster.Agent``: its name, label, homes and
environment, discovery, publish keys and their cuts, MCP client, tool names, instruction files) in
its ``__init__.py`` (standard library only: the fast paths read it), its transcript adapter
(``transcripts.py``, a ``pipeline.sources.base.SourceAdapter``) and its publish targets
(``publish.py``, each a ``pipeline.publish.targets.base.PublishTarget``). This package sits above
every other layer of ``pipeline/``; the layers below reach the agents through ``pipeline.roster``.
``docs/adding-an-agent.md`` says how a new agent is added.
"""

"""The publish targets, one module per agent (``claude_code``, ``gemini``, ``codex``,
``agents_md``), and ``registry``: which plans one publish makes.
"""

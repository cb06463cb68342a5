"""The publish targets: ``base.PublishTarget`` (what a target says about itself), one module per
agent (``claude_code``, ``gemini``, ``codex``, ``agents_md``), and ``registry``: the list of
targets, which plans one publish makes, and which folders the targets that are on write in.
"""

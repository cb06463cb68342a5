"""The memory as files: topic frontmatter (``frontmatter``) and what a topic cites (``cites``), a
scope's files and index on disk (``listing``), materialized phase-1 inputs (``inputs``) and current
values (``current``), forgetting that travels (``tombstones``, ``forget_records``, ``likeness``,
``forget_history``), which scopes hold a session (``held``), a person's steering of one memory
(``steer``, ``why``), and reading it for people (``read``). The scope layout is the kernel's
``pipeline.layout``; git and the repository are ``pipeline.gitrepo``; the checks after phase 2 are
``pipeline.checks``.
"""

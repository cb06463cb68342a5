"""The memory repository: the only place memd runs git (``git``), the scope layout and its caps
(``layout``), topic-file frontmatter (``frontmatter``), materialized phase-1 inputs (``inputs``),
post-agent checks (``validate``) and provenance (``provenance``), the repository itself with its
scratch copies, landing and inbox branches (``repository``), and reading it for people (``read``).
"""

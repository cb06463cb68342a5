"""The memory repository: the only place memd runs git (``git``), the scope layout and its caps
(``layout``), topic-file frontmatter (``frontmatter``), materialized phase-1 inputs (``inputs``),
post-agent checks (``validate``) and provenance (``provenance``), forgetting that travels
(``tombstones``), the repository itself with its scratch copies, landing and inbox branches
(``repository``), the remote's fetch and push (``remote``), and reading it for people (``read``).
"""

"""Searching the memory: the topics of every scope read from the memory repository's working tree
(``corpus``), their words as terms (``terms``), which of them a newer topic replaces
(``supersede``), and the ranking that answers a query or abstains (``rank``).

Pure: no MCP, no state store; the uses it ranks by are handed in as a mapping.
"""

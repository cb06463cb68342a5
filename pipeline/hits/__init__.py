"""Memory hits: which of memd's published memory files later sessions read, and each scope's hit
rate (``record`` with the store, ``rate`` with the standard library only, for `memd status`).

Not token usage: what calls spent lives with the model client (``pipeline.llm``).
"""

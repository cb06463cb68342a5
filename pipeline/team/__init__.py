"""Team mode: machines sharing one PostgreSQL store consolidate each scope once and take over what
the others landed (``adopt``); the folders themselves are rows of the store
(``pipeline.store.snapshots``).
"""

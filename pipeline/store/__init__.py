"""The state store: SQLAlchemy 2.1 async over SQLite (default) or PostgreSQL, one code path.

``open_store(url)`` gives a ``Store``; domain operations are functions in the modules beside this
one (``jobs``, ``leases``, ``kv``, ...), each taking the ``Store`` and an aware-UTC ``now``.
"""

from pipeline.store.engine import Store, describe_url, open_store

__all__ = ["Store", "describe_url", "open_store"]

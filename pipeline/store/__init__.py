"""The state store: SQLAlchemy 2.1 async over SQLite (default) or PostgreSQL, one code path.

``open_store(url)`` gives a ``Store``; domain operations are functions in the modules beside this
one (``jobs``, ``leases``, ``kv``, ...), each taking the ``Store`` and an aware-UTC ``now``.
``read`` is the read API, standard library only on SQLite, for every plain read (`memd status`, the
page, `memd mcp`, `memd scan`'s quick check, the daemon's): importing this package loads nothing else, and
``Store`` and ``open_store`` load SQLAlchemy when first asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pipeline.store.engine import Store
    from pipeline.store.opener import open_store

__all__ = ["Store", "open_store"]


def __getattr__(name: str) -> Any:
    if name == "Store":
        from pipeline.store.engine import Store

        return Store
    if name == "open_store":
        from pipeline.store.opener import open_store

        return open_store
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""The state store's URL, read in one place: ``sqlite:///PATH`` or ``postgresql://...``, and shown
with its password hidden.

Standard library only, so the settings schema, `memd status`, `memd scan`'s quick check and the
service unit can all read it without SQLAlchemy (which opens the store with its own parser).
"""

from __future__ import annotations

from pathlib import Path

SCHEMES = frozenset({"sqlite", "postgresql", "postgres"})
"""The backends memd runs on (``postgres`` is PostgreSQL's other name)."""
EXPECTED = "an SQLAlchemy URL starting sqlite:/// or postgresql://"


def backend(url: str) -> str | None:
    """``sqlite`` or ``postgresql`` for a URL memd can open (a ``+driver`` suffix is allowed); else None."""
    if "://" not in url:
        return None
    scheme = url.split(":", 1)[0].split("+", 1)[0]
    if scheme not in SCHEMES:
        return None
    return "sqlite" if scheme == "sqlite" else "postgresql"


def sqlite_path(url: str) -> Path | None:
    """The file of a ``sqlite:///PATH`` store (``~`` expanded, query dropped); None for any other
    store, an in-memory one or a URL without a path."""
    if backend(url) != "sqlite" or ":///" not in url:
        return None
    path = url.split(":///", 1)[1].split("?", 1)[0]
    return None if not path or path == ":memory:" else Path(path).expanduser()


def describe(url: str) -> str:
    """The URL with any password hidden (in the user part or a ``password=`` parameter), for
    messages and `memd status`."""
    if "://" not in url:
        return url
    scheme, rest = url.split("://", 1)
    rest, question, query = rest.partition("?")
    if question:
        query = "&".join(
            f"{param.split('=', 1)[0]}=***" if param.split("=", 1)[0].lower() == "password" else param
            for param in query.split("&")
        )
    if "@" in rest:
        creds, host = rest.rsplit("@", 1)
        if ":" in creds:
            rest = f"{creds.split(':', 1)[0]}:***@{host}"
    return f"{scheme}://{rest}{question}{query}"

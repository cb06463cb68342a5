"""How memd shows a remote URL (standard library only: `memd status` uses it too)."""

from __future__ import annotations

import re

_CREDENTIALS = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^@/]*@")


def shown_url(url: str) -> str:
    """A remote URL as memd shows and records it: never a password or a token (``https://x:y@host``)."""
    return _CREDENTIALS.sub(r"\1", url.strip())

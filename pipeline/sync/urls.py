"""How memd shows a remote URL, and text that may quote it (standard library only: `memd status`
uses it too).

A remote may carry a credential in any part that is not its host or path: the user information
(``https://user:token@host/...``, ``https://token@host/...``), the query (``?private_token=...``)
or the fragment. memd never shows nor records those: ``shown_url`` drops the user information of a
URL with a scheme and puts ``***`` for the query and the fragment; ``scrubbed`` does the same to
every URL in a text (git's own messages quote the remote, sometimes reformatted) and removes the
secret parts themselves wherever they appear.
"""

from __future__ import annotations

import re

HIDDEN = "***"
"""What stands in a shown URL or a message for a part that may be a credential."""
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")
_MIN_SCRUBBED = 4
"""Secret parts shorter than this are not searched for in free text (they would garble it); the
URLs that hold them are still shown without them."""


def _parts(url: str) -> tuple[str, str, str, str] | None:
    """(scheme://, user information, host and path, query and fragment) of a URL with a scheme,
    or None for a path or an scp-like ``user@host:path``."""
    scheme = _SCHEME.match(url)
    if scheme is None:
        return None
    rest = url[scheme.end() :]
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    userinfo, _, host = rest[:end].rpartition("@")
    tail = rest[end:]
    cut = min((i for i in (tail.find(c) for c in "?#") if i >= 0), default=len(tail))
    return scheme.group(0), userinfo, host + tail[:cut], tail[cut:]


def shown_url(url: str) -> str:
    """A remote URL as memd shows and records it: no user information, query or fragment
    (``https://me:tok@host/m.git?private_token=x`` -> ``https://host/m.git?***``)."""
    url = url.strip()
    parts = _parts(url)
    if parts is None:
        user, at, rest = url.partition("@")
        if at and ":" in user and "/" not in user:  # scp-like with a password: user:secret@host:path
            return f"{user.split(':', 1)[0]}@{rest}"
        return url
    scheme, _, where, extra = parts
    return scheme + where + (f"{extra[0]}{HIDDEN}" if extra else "")


def secret_parts(url: str) -> list[str]:
    """The parts of ``url`` that ``shown_url`` hides (each user information, password, query value
    and fragment), longest first."""
    url = url.strip()
    parts = _parts(url)
    found: set[str] = set()
    if parts is None:
        user, at, _ = url.partition("@")
        if at and ":" in user and "/" not in user:
            found.add(user.split(":", 1)[1])
    else:
        _, userinfo, _, extra = parts
        found.update({userinfo, *userinfo.split(":", 1)[1:]})
        query, _, fragment = (
            extra.lstrip("?").partition("#") if extra.startswith("?") else ("", "", extra[1:])
        )
        found.update({query, fragment})
        for pair in re.split(r"[&;]", query):
            found.add(pair.partition("=")[2])
    return sorted((s for s in found if s), key=len, reverse=True)


def scrubbed(text: str, url: str) -> str:
    """``text`` (a git message, a reason) with ``url`` and every URL in it shown as ``shown_url``
    shows them, and every secret part of ``url`` replaced by ``***``."""
    text = text.replace(url.strip(), shown_url(url))
    text = _URL_IN_TEXT.sub(lambda m: shown_url(m.group(0)), text)
    for secret in secret_parts(url):
        if len(secret) >= _MIN_SCRUBBED:
            text = text.replace(secret, HIDDEN)
    return text

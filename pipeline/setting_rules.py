"""The settings' value rules that take code, not just a type and bounds: the store URL, the model
endpoint, the sync remote and branch, the idle time inside the age limit.

``pipeline.settings`` (the one settings table) applies them. Each rule returns the
value as the settings hold it, or raises ``ValueError`` saying what is wrong. Standard library only.
"""

from __future__ import annotations

from pipeline import store_url

BRANCH_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,99}$"
"""``sync.branch``: a branch name git accepts and no option."""


def check_idle_inside_age(min_rollout_idle_hours: float, max_rollout_age_days: float) -> None:
    """``[memories]``: a session must be able to become idle before it is too old to read."""
    if min_rollout_idle_hours >= max_rollout_age_days * 24:
        raise ValueError("min_rollout_idle_hours must be shorter than max_rollout_age_days")


def check_state_db(value: str) -> str:
    """``paths.state_db``: a URL of a backend memd runs on."""
    if store_url.backend(value) is None:
        raise ValueError(f"must be {store_url.EXPECTED}")
    return value


def check_base_url(value: str) -> str:
    """``llm.base_url``: an HTTP(S) endpoint."""
    if not value.startswith(("http://", "https://")):
        raise ValueError("must start with http:// or https://")
    return value


def check_remote(value: str) -> str:
    """``sync.remote``: a git URL memd may fetch from and push to: a path, ``file://``, ``git://``,
    ``ssh://``, ``https://`` or scp-like ``user@host:path``; never an option nor a transport that
    runs a program (``ext::``, ``fd::``). Empty: no sync."""
    value = value.strip()
    if not value:
        return value
    if value.startswith("-"):
        raise ValueError("must be a git URL or a path, not an option")
    if "::" in value.split("/", 1)[0]:
        raise ValueError("a remote helper (ext::, fd::...) is not allowed: give a path, ssh or https URL")
    if any(ch in value for ch in "\0\n\r"):
        raise ValueError("must be one line")
    return value


LOCAL_HOST_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})
"""Host names that mean this machine without asking a resolver (``*.localhost`` too, RFC 6761)."""


def local_host(url: str) -> bool:
    """Whether ``url``'s host is this machine or a private network, decided from the text alone
    (no resolver: a name could resolve anywhere, so only ``localhost`` names and IP literals count):
    loopback, RFC 1918 / RFC 4193 private, link-local."""
    import ipaddress
    from urllib.parse import urlsplit

    try:
        host = (urlsplit(url).hostname or "").lower().rstrip(".")
    except ValueError:
        return False
    if not host:
        return False
    if host in LOCAL_HOST_NAMES or host.endswith(".localhost"):
        return True
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    if addr.is_unspecified or addr.is_multicast:
        return False
    return addr.is_loopback or addr.is_link_local or (addr.is_private and not addr.is_global)


def check_local_only(endpoints: dict[str, tuple[str, str | None]]) -> None:
    """``llm.local_only``: every phase's endpoint on this machine or a private network. An unset
    ``base_url`` means the provider's hosted API (or ``$ANTHROPIC_BASE_URL``), never local."""
    keys = {"extract": "[llm] base_url", "consolidation": "[llm.consolidation] base_url"}
    for phase, (provider, url) in endpoints.items():
        if url is None:
            raise ValueError(
                f"local_only = true, but {keys[phase]} is unset ({phase}: provider {provider}'s hosted API); "
                "set it to a loopback or private address, or set local_only = false"
            )
        if not local_host(url):
            raise ValueError(
                f"local_only = true refuses {keys[phase]} = {url!r}: not loopback or a private address "
                "(give an IP address or localhost; a host name is not trusted to stay local)"
            )

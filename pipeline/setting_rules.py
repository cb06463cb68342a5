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

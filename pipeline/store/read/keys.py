"""The state store's ``kv`` keys and the machine keys every reader shares: a machine's own facts, the steps' last runs, a per-person scope's record."""

from __future__ import annotations

from typing import Any

from pipeline.store.read.rows import Rows
from pipeline.store.read.values import json_value
from pipeline.vocabulary import (
    Step,
)

KV_SQL = "SELECT value FROM kv WHERE key = :key"


def kv_value(rows: Rows, key: str) -> Any:
    """The JSON value at ``key`` in ``kv`` (None when there is none)."""
    found = rows.all(KV_SQL, {"key": key})
    return json_value(found[0]["value"]) if found else None


def machine_key(key: str, machine: str) -> str:
    """The kv key of a fact of one machine's (its steps' last runs, its last scan, its settings):
    machines sharing a store each keep their own."""
    return f"{key}:{machine}"


STALE_TOPICS_KEY = "cites.stale"
"""``kv["cites.stale:<machine>"]``: the topics this machine last published marked stale
(``pipeline.store.cites``): ``{"<scope>/<file>": {"reason": ..., "since": ...}}``."""


def stale_topics(rows: Rows, machine: str) -> dict[str, dict[str, str]]:
    """``<scope>/<file>`` -> ``{"reason", "since"}`` of each topic ``machine`` last published marked stale."""
    value = kv_value(rows, machine_key(STALE_TOPICS_KEY, machine))
    if not isinstance(value, dict):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, dict) and isinstance(v.get("reason"), str)}


SYNC_STATE_KEY = "sync.state"
"""``kv["sync.state"]``: what the last sync with ``[sync] remote`` did (``pipeline.sync.state``)."""

PERSON_VERDICT_KEY = "team.person-verdict:"
"""+ machine key: which machines claiming this machine's ``[team] person`` are bound to it by their keys
(``pipeline.team.people``), for `memd status`."""

RUN_KEY_PREFIX = "run."
"""``kv["run.<step>:<machine>"]``: a daemon step's last run that did something on that machine;
``run.<step>.skipped:<machine>``: its last check that found nothing to do."""

SKIPPED_SUFFIX = ".skipped"

_RUN_NAMES = [f"{s}{suffix}" for s in Step for suffix in ("", SKIPPED_SUFFIX)]

RUNS_SQL = "SELECT key, value FROM kv WHERE key IN ({keys})".format(
    keys=", ".join(f":k{i}" for i in range(len(_RUN_NAMES)))
)


def runs_params(machine: str) -> dict[str, str]:
    """``RUNS_SQL``'s parameters: ``machine``'s keys."""
    return {f"k{i}": machine_key(f"{RUN_KEY_PREFIX}{name}", machine) for i, name in enumerate(_RUN_NAMES)}


def run_name(key: str, machine: str) -> str:
    """``scan`` or ``scan.skipped`` of a key of ``RUNS_SQL``."""
    return key.removeprefix(RUN_KEY_PREFIX).removesuffix(f":{machine}")


def run_key(step: str, *, skipped: bool, machine: str) -> str:
    return machine_key(f"{RUN_KEY_PREFIX}{step}{SKIPPED_SUFFIX if skipped else ''}", machine)


PERSONAL_SEPARATOR = "@"


def personal_key(scope: str, machine: str) -> str:
    """The store's key of ``machine``'s own record of a per-person scope (``global`` on a shared
    store: ``pipeline.store.consolidation.scope_key``)."""
    return f"{scope}{PERSONAL_SEPARATOR}{machine}"


def shown_scope(key: str, machine: str) -> str | None:
    """A scope record's key as `memd status` shows it to ``machine``: its own personal record under
    the scope's name, another machine's not at all (None)."""
    scope, sep, owner = key.partition(PERSONAL_SEPARATOR)
    if not sep:
        return key
    return scope if owner == machine else None


def key_of_machine(rows: list[dict[str, Any]], machine_id: str, host: str | None) -> str:
    """This installation's machine key (``pipeline.store.machines``) among ``MACHINES_SQL``'s rows:
    its id on the host the id is bound to, the id and this host's on another."""
    for row in rows:
        if row["machine_id"] == machine_id and row["host_id"] == host:
            return str(row["key"])
    return machine_id


def this_machine_key(rows: Rows, machine_id: str, host: str | None) -> str:
    """This installation's machine key as the store records it (``pipeline.store.machines``)."""
    return key_of_machine(rows.all(MACHINES_SQL), machine_id, host)


MACHINES_SQL = (
    "SELECT key, machine_id, host_id, hostname, person, seen_at FROM machines ORDER BY first_seen_at, key"
)
"""Which host each machine id is on (``pipeline.store.machines``), for `memd status`."""

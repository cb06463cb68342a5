"""What the user types for a scope or a memory, resolved: a scope key, its short name, a project's
folder (or any folder inside it); and a memory's id, ``<scope>/<file>``.

Every command and page that asks for a scope goes through ``scope_argument``; every one that asks
for a memory through ``topic_id``. ``known`` is the scopes that exist (the memory repository's, the
store's): a short name (``app`` for ``projects/app-9a85e48f``) or a bare key is matched against them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from pipeline.frozen import frozen_by_position
from pipeline.layout import GLOBAL_SCOPE, PROJECTS_DIR, check_file, is_scope, is_topic_path

_HASH_LEN = 8


class ScopeNotFound(ValueError):
    """The value names no scope (the message says why, and which scopes were close)."""


@frozen_by_position
class TopicId:
    """A memory's id: the scope it lives in and its file there (``projects/app-1a2b3c4d/deploy.md``)."""

    scope: str
    file: str

    def __str__(self) -> str:
        return f"{self.scope}/{self.file}"


def topic_id_text(scope: str, file: str) -> str:
    """The id shown for a topic of ``scope`` (``global/prefs.md``)."""
    return f"{scope}/{file}"


def short_name(scope: str) -> str:
    """The readable part of a scope's key (``app`` for ``projects/app-9a85e48f``; ``global`` as is)."""
    if scope == GLOBAL_SCOPE:
        return scope
    key = scope.removeprefix(f"{PROJECTS_DIR}/")
    name, dash, digest = key.rpartition("-")
    return name if dash and len(digest) == _HASH_LEN and name else key


def _looks_like_path(value: str, cwd: Path | None) -> bool:
    if value.startswith(("/", "~")):
        return True
    return cwd is not None and (value.startswith(("./", "../")) or value in (".", ".."))


def scope_of_folder(folder: str, *, cwd: Path | None = None) -> str:
    """The scope of the project ``folder`` is in (its git repository's main worktree, else the folder
    itself), as memd keys a session's project. A file is in its folder's project (its own name is
    no project's)."""
    from pipeline.projects import ProjectResolver, scope_for

    path = Path(folder).expanduser()
    if not path.is_absolute():
        if cwd is None:
            raise ScopeNotFound(f"a relative folder needs a working directory: {folder!r}")
        path = cwd / path
    if path.is_file():
        path = path.parent
    project = ProjectResolver().resolve(os.path.normpath(str(path)))
    return scope_for(project)


def scope_argument(value: str, *, known: Iterable[str] = (), cwd: Path | None = None) -> str:
    """A scope from what the user typed: ``global``, ``projects/<key>``, ``<key>``, a key's short name
    (when exactly one known scope has it), or a project's folder or any folder inside it (absolute,
    ``~``; relative ones only with ``cwd``, the command line's working directory: a page has none).
    Raises ``ScopeNotFound`` with the reason."""
    value = value.strip().rstrip("/") if value.strip() not in ("/",) else value.strip()
    if not value:
        raise ScopeNotFound("no scope given")
    if value == GLOBAL_SCOPE or value.startswith(f"{PROJECTS_DIR}/"):
        if not is_scope(value):
            raise ScopeNotFound(f"not a scope: {value!r} (expected 'global' or 'projects/<key>')")
        return value
    known_scopes = sorted(set(known))
    if _looks_like_path(value, cwd):
        return scope_of_folder(value, cwd=cwd)
    keyed = f"{PROJECTS_DIR}/{value}"
    if keyed in known_scopes:
        return keyed
    by_name = [s for s in known_scopes if s != GLOBAL_SCOPE and short_name(s) == value]
    if len(by_name) == 1:
        return by_name[0]
    if len(by_name) > 1:
        raise ScopeNotFound(
            f"{value!r} is the name of {len(by_name)} scopes: {', '.join(by_name)}; give the key"
        )
    if cwd is not None and (cwd.joinpath(value).is_dir() or cwd.joinpath(value).is_file()):
        return scope_of_folder(value, cwd=cwd)
    if is_scope(keyed):
        return keyed
    raise ScopeNotFound(f"not a scope, project key or folder: {value!r}")


def topic_id(value: str, *, known: Iterable[str] = ()) -> TopicId:
    """A memory's id from what the user typed: ``<scope>/<file>`` where the scope may also be a bare
    key or a short name (``app/deploy.md``). Raises ``ScopeNotFound``."""
    value = value.strip().strip("/")
    if value.startswith(f"{GLOBAL_SCOPE}/"):
        scope, file = GLOBAL_SCOPE, value[len(GLOBAL_SCOPE) + 1 :]
    elif value.startswith(f"{PROJECTS_DIR}/"):
        _, key, file = (value.split("/", 2) + ["", ""])[:3]
        scope = f"{PROJECTS_DIR}/{key}"
    elif "/" in value:
        head, file = value.split("/", 1)
        scope = scope_argument(head, known=known)
    else:
        raise ScopeNotFound(f"not a memory id: {value!r} (expected '<scope>/<file>', e.g. 'global/prefs.md')")
    try:
        check_file(file)
    except ValueError:
        file = ""
    if not is_scope(scope) or not file or not is_topic_path(file):
        raise ScopeNotFound(
            f"not a memory id: {value!r} (expected '<scope>/<file>.md', e.g. 'global/prefs.md')"
        )
    return TopicId(scope, file)


def folders_by_scope(projects: Iterable[str]) -> dict[str, list[str]]:
    """Each scope's project folders (a repository cloned at two paths is one scope, two folders), from
    the projects the store recorded for sessions; no git runs (a key is read from ``.git/config``)."""
    from pipeline.projects import scope_for

    out: dict[str, list[str]] = {}
    for project in sorted(set(projects)):
        if project:
            out.setdefault(scope_for(project), []).append(project)
    return out

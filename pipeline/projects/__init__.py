"""Which project a session belongs to, and the memory scope that project maps to.

A working directory resolves through ``git rev-parse --git-common-dir``, so a linked worktree or a
subfolder joins its main repository; a directory outside git is its own project; a directory that
no longer exists keeps the project recorded when it was seen. Git runs through
``pipeline.gitrepo.git_env.git_stdout``: the hardened configuration (no fsmonitor, no hooks, no user or
system config) of every git call memd makes. Moving a scope whose project's key changed is
``pipeline.projects.rekey``.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from pipeline.layout import GLOBAL_SCOPE, PROJECTS_DIR

GIT_TIMEOUT_S = 5.0


def _git(cwd: Path, *args: str) -> str | None:
    # Imported here: a scope's key needs no git (`memd status` maps projects to scopes without
    # loading subprocess).
    from pipeline.gitrepo.git_env import git_stdout

    return git_stdout(cwd, *args, timeout_s=GIT_TIMEOUT_S)


def git_project_root(directory: Path) -> Path | None:
    """The main worktree's root of the repository containing ``directory``, or None outside git."""
    common = _git(directory, "rev-parse", "--path-format=absolute", "--git-common-dir")
    if common is None:
        return None
    common_path = Path(common)
    if common_path.name == ".git":
        return common_path.parent
    # A bare repository, a submodule (.git/modules/x) or a separate git dir: use the worktree's top level.
    top = _git(directory, "rev-parse", "--show-toplevel")
    return Path(top) if top else None


class ProjectResolver:
    """Resolves working directories to projects, asking git once per directory."""

    def __init__(self) -> None:
        self._cache: dict[str, str] = {}

    def resolve(self, cwd: str | None, recorded: str | None = None) -> str | None:
        if not cwd:
            return recorded
        if cwd in self._cache:
            return self._cache[cwd]
        directory = Path(cwd)
        if not directory.is_dir():
            # Gone since (a deleted worktree, a temp dir): keep what was recorded when it existed.
            return recorded or os.path.normpath(cwd)
        root = git_project_root(directory)
        project = str(root) if root is not None else os.path.normpath(str(directory.resolve()))
        self._cache[cwd] = project
        return project


def resolve_project(cwd: str | None, recorded: str | None = None) -> str | None:
    return ProjectResolver().resolve(cwd, recorded)


IGNORE_FILE = ".memd-ignore"


def has_ignore_file(project: str) -> bool:
    """Has the user opted the project out of memory (a ``.memd-ignore`` file in its root)?"""
    return os.path.exists(os.path.join(project, IGNORE_FILE))


def path_key(project: str) -> str:
    """The key of a project without a remote: its base name and a short hash of its full path
    (every key was this before memd keyed repositories by their origin)."""
    return _key(Path(project).name, project)


def _key(name: str, identity: str) -> str:
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "root"
    digest = hashlib.sha256(identity.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{base[:48]}-{digest}"


def project_key(project: str) -> str:
    """A stable, readable folder name for a project. A git repository with an ``origin`` remote is
    named by that remote (``normalize_remote``: the same repository cloned at two paths, on two
    machines, is one scope); any other project by its path (``path_key``)."""
    identity = repository_identity(project)
    if identity is None:
        return path_key(project)
    return _key(identity.rsplit("/", 1)[-1], identity)


def repository_identity(project: str) -> str | None:
    """The normalised ``origin`` URL of the repository rooted at ``project`` (read from its
    ``.git/config``, as hostile text, without running git), a relative one resolved against
    ``project``; or None."""
    url = origin_url(Path(project))
    return normalize_remote(url, base=Path(project)) if url else None


_SCP_LIKE = re.compile(r"^(?:[^@/]+@)?([^:/]+):(?!//)(.+)$")
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://(?:[^@/]*@)?([^/:]*)(?::(\d*))?(/.*)?$")
_FILE_URL = re.compile(r"^file://", re.IGNORECASE)
DEFAULT_PORTS = {"ssh": 22, "git+ssh": 22, "ssh+git": 22, "https": 443, "http": 80, "git": 9418}
"""The port each scheme uses when none is written: written out, it is no part of the identity."""


def normalize_remote(url: str, *, base: Path | None = None) -> str | None:
    """A remote URL as one identity for every way of writing it: no scheme, credentials,
    ``user@``, ``.git`` or trailing slash, the host in lower case, the port only when it is not the
    scheme's default (``DEFAULT_PORTS``); ``git@host:owner/repo``, ``ssh://git@host:22/owner/repo.git``
    and ``https://user:token@Host/owner/repo/`` are all ``host/owner/repo``, and
    ``https://host:8443/owner/repo`` is ``host:8443/owner/repo``. A local path (or ``file://`` URL) is
    its absolute path, normalised: a relative one is resolved against ``base`` (the work tree, as git
    resolves it), so two unrelated repositories whose ``origin`` is ``../app.git`` are two
    identities (without ``base``, a relative path is kept as written). None when empty."""
    url = url.strip()
    if not url:
        return None
    if _FILE_URL.match(url):
        return _local(url[len("file://") :], base)
    match = _URL.match(url)
    if match is not None:
        scheme, host, port = match.group(1).lower(), match.group(2).lower(), match.group(3) or ""
        path = (match.group(4) or "").lstrip("/").removeprefix("~/")
        if port and int(port) != DEFAULT_PORTS.get(scheme):
            host = f"{host}:{int(port)}"
        return _strip(f"{host}/{path}") if host else None
    scp = _SCP_LIKE.match(url)
    if scp is not None and not url.startswith(("/", ".", "~")):
        return _strip(f"{scp.group(1).lower()}/{scp.group(2).lstrip('/').removeprefix('~/')}")
    return _local(url, base)


def _local(path: str, base: Path | None) -> str | None:
    """A local repository's path, absolute (joined to ``base`` when relative) and normalised."""
    if base is not None and not os.path.isabs(path) and not path.startswith("~"):
        path = os.path.join(str(base), path)
    return _strip(os.path.normpath(path)) or None


def _strip(path: str) -> str:
    path = path.rstrip("/")
    path = path.removesuffix(".git").rstrip("/")
    return path


def origin_url(root: Path) -> str | None:
    """``remote.origin.url`` of the repository whose work tree is ``root`` (None: no such remote,
    no ``.git`` folder, or a config memd cannot read safely)."""
    from pipeline.safefile import UnsafeFile, read_text_capped

    try:
        text = read_text_capped(root / ".git" / "config", MAX_CONFIG_BYTES, follow_symlinks=False)
    except (OSError, UnsafeFile, ValueError):
        return None
    return _origin_in(text)


MAX_CONFIG_BYTES = 256 * 1024
_SECTION = re.compile(r'^\[\s*remote\s+"((?:[^"\\]|\\.)*)"\s*\]\s*$', re.IGNORECASE)
_URL_KEY = re.compile(r"^url\s*=\s*(.*?)\s*$", re.IGNORECASE)


def _origin_in(text: str) -> str | None:
    in_origin = False
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            section = _SECTION.match(line)
            in_origin = section is not None and section.group(1) == "origin"
            continue
        if in_origin and (key := _URL_KEY.match(line)) is not None:
            value = key.group(1)
            if len(value) >= 2 and value[0] == value[-1] == '"':
                value = value[1:-1]
            return value or None
    return None


def scope_for_path(project: str) -> str:
    """The scope a project had before memd keyed repositories by origin (``path_key``)."""
    return f"{PROJECTS_DIR}/{path_key(project)}"


def scope_for(project: str | None) -> str:
    """The memory scope of a project: ``projects/<key>``, or ``global`` for a session without one."""
    return GLOBAL_SCOPE if not project else f"{PROJECTS_DIR}/{project_key(project)}"

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from pipeline.projects import GLOBAL_SCOPE, ProjectResolver, project_key, resolve_project, scope_for


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True, capture_output=True
    )


def _repo(path: Path) -> Path:
    path.mkdir(parents=True)
    _git(path, "init", "-q", "-b", "main")
    (path / "README").write_text("x")
    _git(path, "add", "README")
    _git(path, "commit", "-qm", "init")
    return path


def test_a_subfolder_joins_its_repository(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "app")
    sub = repo / "src" / "deep"
    sub.mkdir(parents=True)
    assert resolve_project(str(sub)) == str(repo.resolve())


def test_a_linked_worktree_joins_its_main_repository(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "app")
    wt = tmp_path / "app-feature"
    _git(repo, "worktree", "add", "-q", str(wt), "-b", "feature")
    assert resolve_project(str(wt)) == str(repo.resolve())
    assert resolve_project(str(wt / ".")) == str(repo.resolve())


def test_a_directory_outside_git_is_its_own_project(tmp_path: Path) -> None:
    plain = tmp_path / "notes"
    plain.mkdir()
    assert resolve_project(str(plain)) == str(plain.resolve())


def test_a_vanished_directory_keeps_the_recorded_project(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    assert resolve_project(str(gone), recorded="/home/u/app") == "/home/u/app"
    assert resolve_project(str(gone)) == str(gone)
    assert resolve_project(None, recorded="/x") == "/x"


def test_the_resolver_asks_git_once_per_directory(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "app")
    resolver = ProjectResolver()
    assert resolver.resolve(str(repo)) == str(repo.resolve())
    # Once cached, removing git does not change the answer within this resolver's life.
    subprocess.run(["rm", "-rf", str(repo / ".git")], check=True)
    assert resolver.resolve(str(repo)) == str(repo.resolve())


def test_scope_keys_are_stable_readable_and_distinct() -> None:
    assert scope_for(None) == GLOBAL_SCOPE
    a = scope_for("/home/u/work/app")
    b = scope_for("/home/u/play/app")
    assert a.startswith("projects/app-")
    assert a != b
    assert a == scope_for("/home/u/work/app")
    assert project_key("/weird/na me!").startswith("na-me-")


def test_git_runs_hardened_in_a_users_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pipeline.gitrepo.git_env as git_env

    repo = _repo(tmp_path / "app")
    marker = tmp_path / "ran"
    with (repo / ".git" / "config").open("a") as f:
        f.write(f"[core]\n\tfsmonitor = touch {marker}\n\thooksPath = {repo / '.git' / 'hooks'}\n")
    for hook in ("post-checkout", "post-index-change", "reference-transaction"):
        (repo / ".git" / "hooks" / hook).write_text(f"#!/bin/sh\ntouch {marker}\n")
        (repo / ".git" / "hooks" / hook).chmod(0o755)
    # What the user's shell carries must not steer git elsewhere.
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "user.gitconfig"))
    seen: list[tuple[list[str], dict[str, str]]] = []
    real_run = subprocess.run

    def recording_run(argv: list[str], **kw: Any) -> Any:
        seen.append((list(argv), dict(kw["env"])))
        return real_run(argv, **kw)

    monkeypatch.setattr(git_env.subprocess, "run", recording_run)

    assert resolve_project(str(repo)) == str(repo.resolve())

    assert seen
    for argv, env in seen:
        assert argv[0] == "git"
        assert "core.fsmonitor=false" in argv
        assert "core.hooksPath=/dev/null" in argv
        assert env == git_env.safe_env()
        assert "GIT_DIR" not in env
    assert not marker.exists()


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:Acme/App.git",
        "ssh://git@github.com/Acme/App.git",
        "ssh://git@github.com:22/Acme/App",
        "https://github.com/Acme/App",
        "https://user:ghp_token@GitHub.com/Acme/App.git/",
        "git://github.com/Acme/App.git",
    ],
)
def test_every_way_of_writing_a_remote_is_one_identity(url: str) -> None:
    from pipeline.projects import normalize_remote

    assert normalize_remote(url) == "github.com/Acme/App"


def test_remotes_that_differ_are_different_identities() -> None:
    from pipeline.projects import normalize_remote

    assert normalize_remote("git@github.com:acme/app.git") != normalize_remote("git@github.com:acme/app2.git")
    assert normalize_remote("git@gitlab.com:acme/app.git") != normalize_remote("git@github.com:acme/app.git")
    assert (
        normalize_remote("/srv/git/app.git/") == normalize_remote("file:///srv/git/app.git") == "/srv/git/app"
    )
    assert normalize_remote("") is None


def test_one_repository_cloned_at_two_paths_is_one_scope(tmp_path: Path) -> None:
    first, second = _repo(tmp_path / "laptop" / "app"), _repo(tmp_path / "devbox" / "work" / "app")
    _git(first, "remote", "add", "origin", "git@github.com:acme/app.git")
    _git(second, "remote", "add", "origin", "https://github.com/acme/app")
    assert scope_for(str(first)) == scope_for(str(second))
    assert project_key(str(first)).startswith("app-")


def test_a_repository_without_origin_keeps_its_path_key(tmp_path: Path) -> None:
    from pipeline.projects import path_key

    repo = _repo(tmp_path / "app")
    _git(repo, "remote", "add", "upstream", "git@github.com:acme/app.git")
    assert project_key(str(repo)) == path_key(str(repo))
    assert project_key(str(tmp_path / "not-a-repo")) == path_key(str(tmp_path / "not-a-repo"))


def test_a_hostile_git_config_names_no_scope_outside_safe_characters(tmp_path: Path) -> None:
    from pipeline.layout import is_scope

    repo = _repo(tmp_path / "app")
    config = repo / ".git" / "config"
    config.write_text(config.read_text() + '[remote "origin"]\n\turl = "../../../etc/x y;$(rm -rf ~)"\n')
    assert is_scope(scope_for(str(repo)))


@pytest.mark.parametrize("origin", ["../app.git", "./app.git", "file://../app.git", "../app"])
def test_unrelated_repositories_with_one_relative_origin_are_different_scopes(
    tmp_path: Path, origin: str
) -> None:
    """Two unrelated repositories whose ``origin`` is written the same relative way: the origin is
    resolved against each work tree, so each keys by its own absolute path."""
    first, second = _repo(tmp_path / "one" / "app"), _repo(tmp_path / "two" / "app")
    for repo in (first, second):
        _git(repo, "remote", "add", "origin", origin)
    assert scope_for(str(first)) != scope_for(str(second))
    assert project_key(str(first)).startswith("app-")


def test_relative_and_file_origins_key_by_the_path_they_resolve_to(tmp_path: Path) -> None:
    from pipeline.projects import normalize_remote, repository_identity

    served = tmp_path / "served" / "app.git"
    clone = _repo(tmp_path / "src" / "app")
    _git(clone, "remote", "add", "origin", "../../served/app.git")
    identity = str(tmp_path / "served" / "app")
    assert repository_identity(str(clone)) == identity
    # The same repository named by its absolute path or a file URL from another clone is one scope
    other = _repo(tmp_path / "elsewhere" / "deep" / "app")
    _git(other, "remote", "add", "origin", f"file://{served}")
    assert repository_identity(str(other)) == identity
    assert scope_for(str(clone)) == scope_for(str(other))
    assert normalize_remote("../x.git", base=tmp_path / "a" / "b") == str(tmp_path / "a" / "x")
    assert normalize_remote("file://./x", base=tmp_path) == str(tmp_path / "x")


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("ssh://git@host/x.git", "ssh://git@host:2222/x.git"),
        ("https://host/x", "https://host:8443/x"),
        ("git://host/x", "git://host:9419/x"),
        ("http://host/x", "http://host:8080/x"),
        ("ssh://git@host:2222/x", "ssh://git@host:2223/x"),
    ],
)
def test_a_non_default_port_is_part_of_the_identity(one: str, other: str) -> None:
    from pipeline.projects import normalize_remote

    assert normalize_remote(one) != normalize_remote(other)
    assert normalize_remote("https://host:8443/x") == "host:8443/x"


@pytest.mark.parametrize(
    ("url", "same_as"),
    [
        ("https://host:443/x", "https://host/x"),
        ("http://host:80/x", "http://host/x"),
        ("ssh://git@host:22/x.git", "git@host:x.git"),
        ("git://host:9418/x", "git://host/x"),
        ("https://host:8443/x.git/", "https://user:pw@HOST:8443/x"),
    ],
)
def test_a_default_port_is_no_part_of_the_identity(url: str, same_as: str) -> None:
    from pipeline.projects import normalize_remote

    assert normalize_remote(url) == normalize_remote(same_as)

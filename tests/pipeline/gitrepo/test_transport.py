"""Which remotes git reaches on this machine, and what memd checks there before any git call."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pipeline.errors import SyncRefused
from pipeline.gitrepo.git import run_git
from pipeline.gitrepo.repository import MemoryRepo
from pipeline.gitrepo.transport import check_local_remote, local_path, receive_pack, remote_args, upload_pack


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("/srv/memory.git", "/srv/memory.git"),
        ("../memory.git", "../memory.git"),
        ("file:///srv/memory.git", "/srv/memory.git"),
        ("./a:b", "./a:b"),
        ("git@github.com:me/memory.git", None),
        ("host:memory.git", None),
        ("ssh://host/memory.git", None),
        ("https://host/memory.git", None),
        ("git://host/memory.git", None),
    ],
)
def test_a_remote_on_this_machine_is_told_apart_from_a_server(url: str, path: str | None) -> None:
    assert local_path(url) == path
    named = upload_pack(url) + receive_pack(url)
    if path is None:
        assert named == []  # a server runs its own programs
    else:
        assert len(named) == 2
        assert all("core.hooksPath=/dev/null" in arg for arg in named)


def _bare(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)
    return path


def test_a_sound_path_remote_passes_and_a_missing_one_is_left_to_git(tmp_path: Path) -> None:
    served = _bare(tmp_path / "memory.git")
    check_local_remote(str(served), tmp_path)
    check_local_remote(f"file://{served}", tmp_path)
    check_local_remote("memory", tmp_path)  # git finds memory.git, and so does memd
    check_local_remote(str(tmp_path / "nothing"), tmp_path)


def test_a_path_remote_memd_cannot_check_as_git_would_read_it_is_refused(tmp_path: Path) -> None:
    served = _bare(tmp_path / "memory.git")
    (served / "config").write_text((served / "config").read_text() + "[credential]\n\thelper = x\n")
    with pytest.raises(SyncRefused, match="credential.helper"):
        check_local_remote("memory", tmp_path)
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / ".git").write_text(f"gitdir: {served}\n")
    with pytest.raises(SyncRefused, match=r"\.git file"):
        check_local_remote(str(tmp_path / "linked"), tmp_path)
    for url in ("file://localhost/srv/memory.git", "file:///srv/mem%6Fry.git", "~/memory.git"):
        with pytest.raises(SyncRefused):
            check_local_remote(url, tmp_path)


@pytest.mark.parametrize("named", [True, False])
async def test_the_named_receive_pack_runs_nothing_a_remote_config_names_even_unchecked(
    tmp_path: Path, named: bool
) -> None:
    # What if the remote's config changes between memd's check and git's start: the git memd names
    # on the other side still runs none of it (without it, git runs the remote's program)
    marker = tmp_path / "ran"
    script = tmp_path / "script"
    script.write_text(f"#!/bin/sh\necho ran >> {marker}\n")
    script.chmod(0o755)
    served = _bare(tmp_path / "memory.git")
    elsewhere = _bare(tmp_path / "elsewhere.git")
    (served / "objects" / "info" / "alternates").write_text(f"{elsewhere / 'objects'}\n")
    hooks = served / "hooks"
    for hook in ("pre-receive", "update", "post-receive", "post-update", "reference-transaction"):
        (hooks / hook).write_text(script.read_text())
        (hooks / hook).chmod(0o755)
    (served / "config").write_text(
        (served / "config").read_text()
        + f"[core]\n\talternateRefsCommand = {script}\n\tfsmonitor = {script}\n"
    )
    repo = MemoryRepo(tmp_path / "memory")
    await repo.ensure()
    url = str(served)
    result = await run_git(
        repo.path,
        *remote_args(),
        "push",
        *(receive_pack(url) if named else []),
        "--",
        url,
        "HEAD:refs/heads/main",
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert marker.exists() is not named

"""Which remotes git reaches on this machine, and what memd checks there before any git call."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pipeline.errors import SyncRefused
from pipeline.memory.transport import check_local_remote, local_path, receive_pack, upload_pack


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

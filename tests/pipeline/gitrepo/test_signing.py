"""This machine's signing key: made once by ssh-keygen in the state directory (0600), named after the
machine, never written through a link; the memory repository's commits are signed with it."""

from __future__ import annotations

import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pipeline.errors import MemoryRepoError
from pipeline.gitrepo.repository import MemoryRepo
from pipeline.gitrepo.signing import KEY_FILE, Signer, ensure_key, public_key
from pipeline.machine import machine_id


def test_the_key_is_made_once_0600_and_named_after_the_machine(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with ThreadPoolExecutor(4) as pool:
        paths = set(pool.map(lambda _: ensure_key(state), range(4)))
    assert paths == {state / KEY_FILE}
    for name in (KEY_FILE, KEY_FILE + ".pub"):
        assert oct((state / name).stat().st_mode & 0o777) == "0o600"
    pub = (state / (KEY_FILE + ".pub")).read_text()
    assert pub.startswith("ssh-ed25519 ")
    assert pub.split()[2] == f"memd-{machine_id(state)}"
    assert public_key(state) == " ".join(pub.split()[:2])
    assert not [p for p in state.iterdir() if p.name.startswith(".signing-key.")]  # no leftovers


def test_a_key_path_that_is_a_link_is_refused_and_nothing_is_written_through_it(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    elsewhere = tmp_path / "elsewhere"
    os.symlink(elsewhere, state / KEY_FILE)
    with pytest.raises(MemoryRepoError, match="not a regular file"):
        ensure_key(state)
    assert not elsewhere.exists()


async def test_every_commit_of_a_repository_with_a_signer_is_signed(tmp_path: Path) -> None:
    state = tmp_path / "state"
    repo = MemoryRepo(tmp_path / "memory", Signer(state))
    await repo.ensure()
    (repo.path / "README.md").write_text("changed\n")
    await repo.git("add", "README.md")
    await repo.commit_staged("memd: a change\n")
    allowed = tmp_path / "allowed"
    allowed.write_text(f'memd namespaces="git" {public_key(state)}\n')
    out = subprocess.run(
        ["git", "-c", f"gpg.ssh.allowedSignersFile={allowed}", "-c", "gpg.format=ssh", "log", "--format=%G?"],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env={"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"},
    )
    assert out.stdout.split() == ["G", "G"]

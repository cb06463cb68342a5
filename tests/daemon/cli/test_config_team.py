"""`memd config validate` on a PostgreSQL state store (team mode): memory travels only through a
``[sync] remote``, and a file without one is told so (it is still valid: one machine may use one)."""

from __future__ import annotations

from pathlib import Path

from tests.daemon.cli.test_cli import _memd


def test_a_shared_store_without_a_sync_remote_is_told_memory_does_not_travel(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[paths]\nstate_db = "postgresql://memd@db.internal/memd"\n')
    done = _memd("--config", str(path), "config", "validate", env={"HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert "memory does not travel between the machines sharing this state store" in done.stdout
    assert "[sync] remote" in done.stdout

    path.write_text(
        '[paths]\nstate_db = "postgresql://memd@db.internal/memd"\n[sync]\nremote = "/srv/memory.git"\n'
    )
    done = _memd("--config", str(path), "config", "validate", env={"HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert "does not travel" not in done.stdout

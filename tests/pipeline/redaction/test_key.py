from __future__ import annotations

import stat
import threading
from pathlib import Path

import pytest

from pipeline.errors import RedactionKeyError
from pipeline.redaction import KEY_FILE, load_or_create_key


def test_created_once_private_and_reused(tmp_path: Path) -> None:
    state = tmp_path / "state" / "memd"
    key = load_or_create_key(state)
    path = state / KEY_FILE
    assert len(key) == 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_or_create_key(state) == key
    assert [p.name for p in state.iterdir()] == [KEY_FILE]  # no temporary files left behind


def test_concurrent_creation_agrees(tmp_path: Path) -> None:
    keys: list[bytes] = []
    threads = [threading.Thread(target=lambda: keys.append(load_or_create_key(tmp_path))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert len(keys) == 8
    assert len(set(keys)) == 1


def test_malformed_key_is_a_typed_error(tmp_path: Path) -> None:
    (tmp_path / KEY_FILE).write_text("not hex\n")
    with pytest.raises(RedactionKeyError, match="malformed"):
        load_or_create_key(tmp_path)


def test_open_permissions_are_tightened(tmp_path: Path) -> None:
    key = load_or_create_key(tmp_path)
    path = tmp_path / KEY_FILE
    path.chmod(0o644)
    assert load_or_create_key(tmp_path) == key
    assert stat.S_IMODE(path.stat().st_mode) == 0o600

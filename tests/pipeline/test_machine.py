from __future__ import annotations

import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pipeline.machine import UNNAMED, known_id, machine_id, machine_path, read_id


def test_the_id_is_made_once_private_and_stays(tmp_path: Path) -> None:
    state = tmp_path / "state"
    assert read_id(state) is None
    assert known_id(state) == UNNAMED  # the read-only paths create nothing
    assert not state.exists()
    first = machine_id(state)
    assert len(first) == 32
    assert int(first, 16) >= 0
    assert machine_id(state) == first == known_id(state)
    assert stat.S_IMODE(machine_path(state).stat().st_mode) == 0o600
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    assert sorted(p.name for p in state.iterdir()) == ["machine-id"]  # no temporary file left
    assert machine_id(tmp_path / "other") != first  # another installation, another machine


def test_processes_starting_at_once_agree_on_one_id(tmp_path: Path) -> None:
    with ThreadPoolExecutor(8) as pool:
        ids = set(pool.map(lambda _: machine_id(tmp_path), range(32)))
    assert len(ids) == 1


def test_a_damaged_id_file_is_named_not_replaced(tmp_path: Path) -> None:
    machine_path(tmp_path).write_text("not an id\n")
    assert read_id(tmp_path) is None
    with pytest.raises(OSError, match="is not a memd machine id"):
        machine_id(tmp_path)
    assert machine_path(tmp_path).read_text() == "not an id\n"

from __future__ import annotations

import asyncio
from pathlib import Path

from daemon.service.watch import SourceWatcher


async def _wait(event: asyncio.Event) -> None:
    await asyncio.wait_for(event.wait(), timeout=20)


async def test_a_file_written_under_a_root_is_reported(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    (root / "p").mkdir(parents=True)
    changed = asyncio.Event()
    watcher = SourceWatcher([root, tmp_path / "missing"], changed.set, debounce_ms=50, step_ms=20)
    task = asyncio.create_task(watcher.run())
    try:
        await _wait(watcher.started)
        assert watcher.mode == "events"
        assert watcher.watched == {root}
        # The watcher thread may need a moment to arm: write until the event arrives.
        for n in range(200):
            (root / "p" / f"s{n}.jsonl").write_text("{}\n")
            try:
                await asyncio.wait_for(changed.wait(), timeout=0.2)
                break
            except TimeoutError:
                continue
        assert changed.is_set()
    finally:
        watcher.stop()
        await asyncio.wait_for(task, timeout=10)


async def test_no_root_means_periodic_scans_until_one_appears(tmp_path: Path) -> None:
    root = tmp_path / "later"
    watcher = SourceWatcher([root], lambda: None, debounce_ms=50, step_ms=20)
    task = asyncio.create_task(watcher.run())
    try:
        await _wait(watcher.started)
        assert watcher.mode == "off"
        watcher.started.clear()
        root.mkdir()
        watcher.refresh()
        await _wait(watcher.started)
        assert watcher.mode == "events"
        assert watcher.watched == {root}
    finally:
        watcher.stop()
        await asyncio.wait_for(task, timeout=10)


async def test_a_failing_watcher_degrades_to_periodic_scans(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    watcher = SourceWatcher([root], lambda: None)

    async def broken(roots: frozenset[Path]) -> None:
        raise OSError(28, "inotify watch limit reached")

    watcher._watch = broken  # type: ignore[method-assign]
    task = asyncio.create_task(watcher.run())
    try:
        await _wait(watcher.started)
        # `started` is set again each time a round decides what to do: the round after the failure
        # gives watching up (no spinning on the event loop to find out).
        while watcher.mode != "off":
            watcher.started.clear()
            await _wait(watcher.started)
        assert watcher.watched == {root}
    finally:
        watcher.stop()
        await asyncio.wait_for(task, timeout=10)

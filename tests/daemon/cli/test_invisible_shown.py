"""What memd shows for review on the command line hides nothing (issue 32, F4): `memd memories show`
and `memd inbox show` write an invisible character that remains as its code point (``<U+E0041>``)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from daemon.cli import cli
from tests.daemon.cli.test_memories_steer import ENV, setup
from tests.fakes.anthropic_api import FakeAnthropicAPI

HIDDEN = "".join(chr(0xE0000 + ord(c)) for c in "AB")


def test_memories_show_writes_invisible_characters_as_code_points(
    tmp_path: Path, fake_api: FakeAnthropicAPI
) -> None:
    base, scope = setup(tmp_path, fake_api)
    memory = next(p for p in tmp_path.rglob("deploy.md") if scope in str(p)).parents[len(scope.split("/"))]
    path = memory / scope / "deploy.md"
    path.write_text(path.read_text() + f"Hand edit.{HIDDEN}\u00ad\n")
    subprocess.run(["git", "-C", str(memory), "commit", "-qam", "a hand edit"], check=True)
    shown = CliRunner().invoke(cli, [*base, "memories", "show", f"{scope}/deploy.md"], env=ENV)
    assert shown.exit_code == 0, shown.output
    assert "Hand edit.<U+E0041><U+E0042><U+00AD>" in shown.output
    assert "\U000e0041" not in shown.output


def test_inbox_show_writes_invisible_characters_as_code_points(
    tmp_path: Path, fake_api: FakeAnthropicAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipeline.consolidate import inbox
    from tests.daemon.cli.test_inbox import config_for

    class Run:
        run_id, scope, branch, inputs = "r1", "global", "inbox/r1", {"project": None}

    class Entry:
        run = Run()

    async def show(*_: Any) -> tuple[Entry, str]:
        return Entry(), f"+The user prefers concise answers.{HIDDEN}\n"

    monkeypatch.setattr(inbox, "show", show)
    config = config_for(tmp_path, fake_api.base_url)
    shown = CliRunner().invoke(cli, ["--config", str(config), "inbox", "show", "r1"], env=ENV)
    assert shown.exit_code == 0, shown.output
    assert "+The user prefers concise answers.<U+E0041><U+E0042>" in shown.output
    assert "\U000e0041" not in shown.output

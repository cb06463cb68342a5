"""The agents as the layers below ``pipeline.agents`` see them (``pipeline.roster``): the ``[publish]``
keys their folders declare are the ones memd always accepted, with the same defaults and the same
``MEMD_PUBLISH__*`` names, and each agent's cut reads as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon.config import ConfigError, load_settings
from pipeline import roster
from pipeline.publish.targets.limits import limits
from pipeline.settings import PublishSettings
from pipeline.settings import SettingsError as ValidationError

PUBLISH_BEFORE = {
    "claude_code": True,
    "gemini": True,
    "codex": False,
    "claude_code_global": False,
    "gemini_global": False,
    "codex_global": False,
    "agents_md": False,
    "opencode_global": False,
    "qwen_code": True,
    "copilot_global": False,
    "codex_summary_token_cap": 2_500,
    "pi_global": False,
    "aider_global": True,
    "aider_project": False,  # added with Aider's project memory (issue 37)
    "openhands_global": True,  # added with OpenHands (issue 37)
    "cline": False,
    "cline_global": True,
}
"""``[publish]`` as ``pipeline/settings.py`` declared it by hand before the agents had folders."""

ENV = {"HOME": "/home/u"}


def test_publish_takes_the_same_keys_with_the_same_defaults() -> None:
    assert PublishSettings().model_dump() == PUBLISH_BEFORE


@pytest.mark.parametrize("key", sorted(PUBLISH_BEFORE))
def test_each_publish_key_is_set_by_file_and_by_its_environment_name(key: str, tmp_path: Path) -> None:
    flipped = 1234 if key == "codex_summary_token_cap" else not PUBLISH_BEFORE[key]
    shown = str(flipped).lower()
    path = tmp_path / "memd.toml"
    path.write_text(f"[publish]\n{key} = {shown}\n")
    assert getattr(load_settings(path, ENV).settings.publish, key) == flipped
    env = {**ENV, f"MEMD_PUBLISH__{key.upper()}": shown}
    assert getattr(load_settings(None, env).settings.publish, key) == flipped


def test_an_unknown_or_wrong_publish_key_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "memd.toml"
    path.write_text("[publish]\ncursor = true\n")
    with pytest.raises(ConfigError, match="cursor"):
        load_settings(path, ENV)
    with pytest.raises(ValidationError):
        PublishSettings(codex_summary_token_cap=0)
    with pytest.raises(ValidationError):
        PublishSettings(claude_code="maybe")


def test_the_cuts_and_who_loads_each_file_read_as_before() -> None:
    said = {name: (limit.agent, limit.file) for name, limit in limits().items()}
    assert said == {
        "claude_code": ("Claude Code", "MEMORY.md"),
        "claude_code_global": ("Claude Code", "CLAUDE.md"),
        "gemini": ("Gemini CLI", "MEMORY.md"),
        "gemini_global": ("Gemini CLI", "GEMINI.md"),
        "qwen_code": ("Qwen Code", "MEMORY.md"),
        "codex": ("Codex", "memory_summary.md"),
        "codex_global": ("Codex", "AGENTS.md"),
        "agents_md": ("Codex, Pi, OpenCode, Copilot CLI, Qwen Code, OpenHands and Cline", "AGENTS.md"),
        "opencode_global": ("OpenCode", "AGENTS.md"),
        "copilot_global": ("Copilot CLI", "copilot-instructions.md"),
        "pi_global": ("Pi", "AGENTS.md"),
        "aider_global": ("Aider", "memd-memory.md"),
        "aider_project": ("Aider", ".aider.memd-memory.md"),
        "openhands_global": ("OpenHands", "memd.md"),
        "cline": ("Cline", "memd-memory.md"),
        "cline_global": ("Cline", "memd-global-memory.md"),
    }


def test_an_agent_registered_later_is_listed_after_the_built_ins_and_goes_again() -> None:
    toy = roster.Agent(
        "toy", "Toy Agent", lambda env: Path(env["HOME"]) / ".toy", lambda root: iter(()), "x:Y"
    )
    roster.register(toy)
    try:
        assert roster.names()[-1] == "toy"
        assert roster.label_of("toy") == "Toy Agent"
        assert roster.get("toy").cli_name == "toy"
        with pytest.raises(ValueError, match="already registered"):
            roster.register(toy)
    finally:
        roster.unregister("toy")
    assert roster.find("toy") is None
    assert roster.label_of("toy") == "toy"  # an old row's name is shown as it is

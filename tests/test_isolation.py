"""The suite never reads or writes the developer's own home: memd publishes by default into the
agents' folders it finds there (Qwen Code's ``~/.qwen`` among them), so a test that ran memd with the
real ``HOME`` wrote test memory into a real agent's memory whenever that agent was installed."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

from pipeline.publish.plan import Homes
from pipeline.settings import Settings, default_values
from pipeline.sources import registry


def test_the_suite_runs_in_a_throwaway_home() -> None:
    real = Path(pwd.getpwuid(os.getuid()).pw_dir).resolve()
    home = Path(os.environ["HOME"]).resolve()
    assert home != real
    assert not home.is_relative_to(real)
    assert Path.home().resolve() == home


def test_every_default_agent_folder_lies_in_the_throwaway_home() -> None:
    home = Path(os.environ["HOME"]).resolve()
    settings = Settings.model_validate(default_values())
    for name in registry.names():
        assert settings.sources[name].root.resolve().is_relative_to(home), name
    homes = Homes.from_settings(settings)
    assert homes.user.resolve() == home
    assert homes.config_home.resolve().is_relative_to(home)
    for path in (settings.paths.memory_dir, settings.paths.state_dir):
        assert path.resolve().is_relative_to(home)

"""The environments the `memd run` tests give memd: a throwaway home, the fixture sessions, the fake API."""

from __future__ import annotations

import os
from pathlib import Path

from tests.fakes.anthropic_api import FakeAnthropicAPI
from tests.fakes.fixtures import FAKE_API_KEY

FIXTURES = Path(__file__).parents[2] / "fixtures" / "transcripts" / "claude_code" / "projects"


def memd_env(tmp_path: Path) -> dict[str, str]:
    """This process's environment without memd's, systemd's or the API's variables, with a home and
    source roots under ``tmp_path`` (Claude Code's exists, empty)."""
    home = tmp_path / "home"
    roots = home / "roots"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMD_", "XDG_", "NOTIFY_", "WATCHDOG_"))}
    env.pop("ANTHROPIC_API_KEY", None)
    env.update(
        {
            "HOME": str(home),
            "MEMD_SOURCES__CLAUDE_CODE__ROOT": str(roots / "claude"),
            "MEMD_SOURCES__CODEX__ROOT": str(roots / "codex"),
            "MEMD_SOURCES__GEMINI_CLI__ROOT": str(roots / "gemini"),
            "MEMD_SOURCES__PI__ROOT": str(roots / "pi"),
        }
    )
    (roots / "claude").mkdir(parents=True)
    return env


def with_sessions(memd_env: dict[str, str]) -> dict[str, str]:
    """The fixture Claude Code sessions under the source root, all of them idle and recent enough."""
    root = Path(memd_env["MEMD_SOURCES__CLAUDE_CODE__ROOT"])
    for src in FIXTURES.rglob("*"):
        if src.is_file():
            dest = root / src.relative_to(FIXTURES)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(src.read_bytes())
    return {
        **memd_env,
        "MEMD_MEMORIES__MIN_ROLLOUT_IDLE_HOURS": "0",
        "MEMD_MEMORIES__MAX_ROLLOUT_AGE_DAYS": "36500",
    }


def with_api(env: dict[str, str], base_url: str, *, batch: bool = False) -> dict[str, str]:
    """The fake key, the API at ``base_url``, Message Batches on or off."""
    return {
        **env,
        "ANTHROPIC_API_KEY": FAKE_API_KEY,
        "MEMD_LLM__BASE_URL": base_url,
        "MEMD_LLM__BATCH": "on" if batch else "off",
    }


def batch_env(memd_env: dict[str, str], fake_api: FakeAnthropicAPI) -> dict[str, str]:
    """The fixture sessions against the fake API in batch mode; the fake ends no batch by itself."""
    fake_api.auto_end_batches = False
    return with_api(with_sessions(memd_env), fake_api.base_url, batch=True)

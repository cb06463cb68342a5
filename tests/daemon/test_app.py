"""The composition root: real steps, loaded lazily."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMD_", "XDG_", "NOTIFY_"))}
    env.pop("ANTHROPIC_API_KEY", None)
    env.update({"HOME": str(tmp_path / "home"), "MEMD_SOURCES__CLAUDE_CODE__ROOT": str(tmp_path / "claude")})
    return env


def test_an_idle_cycle_loads_no_llm_client(tmp_path: Path) -> None:
    # Nor alembic (the store is created here) nor PostgreSQL's dialect on a SQLite store: an idle
    # daemon would carry them for the rest of its life.
    probe = textwrap.dedent(
        """
        import asyncio, sys
        from daemon.app import build
        from daemon.service.once import run_once
        from daemon.config import load_settings

        daemon = build(load_settings(None).settings, watch=False)
        result = asyncio.run(run_once(daemon, install_signals=False))
        print(result.summary())
        heavy = ("anthropic", "pipeline.llm.client", "pipeline.extract.run", "pipeline.consolidate.run", "alembic", "sqlalchemy.dialects.postgresql")
        print(sorted(m for m in heavy if m in sys.modules))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], env=_env(tmp_path), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary, loaded = done.stdout.strip().splitlines()[-2:]
    assert summary == "scan ok, extract skipped, consolidate skipped, publish ok"
    assert loaded == "[]"


def test_without_a_key_scanning_works_and_extraction_names_the_variable(tmp_path: Path) -> None:
    fixtures = (
        Path(__file__).parents[1] / "fixtures" / "transcripts" / "claude_code" / "projects" / "-home-dev-shop"
    )
    root = tmp_path / "claude" / "-home-dev-shop"
    root.mkdir(parents=True)
    for src in fixtures.glob("*.jsonl"):
        (root / src.name).write_bytes(src.read_bytes())
    env = {
        **_env(tmp_path),
        "MEMD_MEMORIES__MIN_ROLLOUT_IDLE_HOURS": "0",
        "MEMD_MEMORIES__MAX_ROLLOUT_AGE_DAYS": "36500",
    }
    done = subprocess.run(
        [sys.executable, "-m", "daemon", "run", "--once"],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 1
    assert "scan         ok" in done.stdout
    assert "memd: extract failed: no API key: set ANTHROPIC_API_KEY" in done.stderr
    assert "a Claude Pro or Max subscription does not cover the API" in done.stderr  # issue 36


def test_a_dry_run_with_work_loads_no_sdk(tmp_path: Path) -> None:
    fixtures = (
        Path(__file__).parents[1] / "fixtures" / "transcripts" / "claude_code" / "projects" / "-home-dev-shop"
    )
    root = tmp_path / "claude" / "-home-dev-shop"
    root.mkdir(parents=True)
    for src in fixtures.glob("*.jsonl"):
        (root / src.name).write_bytes(src.read_bytes())
    probe = textwrap.dedent(
        """
        import asyncio, sys
        from daemon.app import build
        from daemon.service.once import run_once
        from daemon.config import load_settings

        daemon = build(load_settings(None).settings, watch=False)
        result = asyncio.run(run_once(daemon, install_signals=False, dry_run=True))
        print(result.summary())
        print(sorted(m for m in ("anthropic", "pipeline.llm.client") if m in sys.modules))
        """
    )
    env = {
        **_env(tmp_path),
        "MEMD_MEMORIES__MIN_ROLLOUT_IDLE_HOURS": "0",
        "MEMD_MEMORIES__MAX_ROLLOUT_AGE_DAYS": "36500",
    }
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    summary, loaded = done.stdout.strip().splitlines()[-2:]
    assert summary.startswith("scan ok, extract ok"), summary
    assert loaded == "[]"

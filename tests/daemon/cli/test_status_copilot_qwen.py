"""`memd status` covers the Qwen Code and Copilot CLI targets like the others."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from daemon.config import load_settings
from pipeline.clock import FakeClock
from pipeline.publish.run import publish_all
from pipeline.store import open_store
from tests.daemon.cli.test_status import memd_env, status
from tests.pipeline.publish.support import add_scope, git, write_scope


async def test_status_lists_the_qwen_code_and_copilot_targets(tmp_path: Path) -> None:
    env = memd_env(tmp_path, MEMD_PUBLISH__COPILOT_GLOBAL="true", MEMD_PUBLISH__GEMINI="false")
    home = Path(env["HOME"])
    (home / ".qwen").mkdir(parents=True)
    (home / ".copilot").mkdir()
    (home / ".claude").mkdir()
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    settings = load_settings(None, env=env).settings
    store = await open_store(settings.paths.state_db)
    clock = FakeClock(datetime.now(UTC))
    try:
        scope = await add_scope(store, str(repo), clock.now())
        write_scope(settings.paths.memory_dir, scope, summary="Repo digest.")
        write_scope(settings.paths.memory_dir, "global", summary="Likes short answers.")
        await publish_all(store, settings, clock)
    finally:
        await store.close()

    done = status(env, "--json")
    report = json.loads(done.stdout)
    targets = {(t["target"], t["scope"]): t for t in report["publish"]["targets"]}
    qwen = targets[("qwen_code", scope)]
    assert qwen["outcome"] == "published"
    assert qwen["path"].startswith(str(home / ".qwen" / "projects"))
    assert targets[("copilot_global", "global")]["outcome"] == "published"
    assert targets[("copilot_global", "global")]["path"] == str(home / ".copilot" / "copilot-instructions.md")
    table = status(env).stdout
    assert "qwen_code" in table
    assert "copilot_global" in table

"""`memd mcp` starts lean: nothing of memd's heavy side is imported on its way to the SDK."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from daemon.mcp.deps import Deps
from daemon.mcp.server import build_server
from pipeline.clock import SystemClock

REPO = Path(__file__).parents[3]


def test_the_server_s_modules_import_no_store_engine_or_model_client() -> None:
    code = (
        "import sys, daemon.cli, daemon.cli.mcp, daemon.mcp.server, daemon.mcp.deps, daemon.mcp.tools_memory, daemon.mcp.stdio;"
        "print(sorted(m for m in ('sqlalchemy', 'anthropic', 'openai', 'pydantic_settings', 'mcp') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


async def test_memd_mcp_help_names_its_option_and_tools(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "daemon", "mcp", "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "--cwd" in done.stdout
    deps = Deps.make(
        memory_dir=tmp_path / "memory",
        state_dir=tmp_path / "state",
        state_db=f"sqlite:///{tmp_path / 'state.db'}",
        cwd=tmp_path,
        clock=SystemClock(),
    )
    tools = [t.name for t in await build_server(deps).list_tools()]
    assert len(tools) == 4
    missing = [name for name in tools if name not in done.stdout]
    assert not missing, f"`memd mcp --help` does not name {missing}"

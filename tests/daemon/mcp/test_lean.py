"""`memd mcp` starts lean: nothing of memd's heavy side is imported before the SDK serves."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from daemon.mcp.front import FROZEN

REPO = Path(__file__).parents[3]


def test_the_server_s_modules_import_no_store_engine_or_model_client() -> None:
    code = (
        "import sys, daemon.cli, daemon.cli.mcp, daemon.mcp.server, daemon.mcp.deps, daemon.mcp.tools_memory, daemon.mcp.front;"
        "print(sorted(m for m in ('sqlalchemy', 'anthropic', 'pydantic_settings', 'mcp') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_memd_mcp_help_names_its_option_and_tools() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "daemon", "mcp", "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "--cwd" in done.stdout
    frozen = json.loads(FROZEN.read_text(encoding="utf-8"))
    tools = [t["name"] for t in frozen["answers"][frozen["latest"]]["tools/list"]["tools"]]
    assert len(tools) == 4
    missing = [name for name in tools if name not in done.stdout]
    assert not missing, f"`memd mcp --help` does not name {missing}"

"""`memd mcp` starts lean: nothing of memd's heavy side is imported before the SDK serves."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).parents[3]


def test_the_server_s_modules_import_no_store_engine_or_model_client() -> None:
    code = (
        "import sys, daemon.cli, daemon.cli.mcp, daemon.mcp.server, daemon.mcp.deps, daemon.mcp.tools_memory;"
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
    assert "memory_search" in done.stdout

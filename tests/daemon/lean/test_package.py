"""The fast read side is one package: the write side of the daemon never imports `memd status`'s
assembly (``daemon.status``), and the fast paths read settings and rows only through ``daemon.lean``."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
READERS = ("daemon/status/", "daemon/cli/status.py", "daemon/ui/")
"""The modules that show `memd status`'s report: its command and the page."""


def imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_only_the_status_command_and_the_page_import_the_status_assembly() -> None:
    offenders = []
    for path in sorted((ROOT / "daemon").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(READERS):
            continue
        if any(name == "daemon.status" or name.startswith("daemon.status.") for name in imports(path)):
            offenders.append(rel)
    assert offenders == []


def test_nothing_in_pipeline_imports_the_daemon_s_read_side() -> None:
    offenders = [
        path.relative_to(ROOT).as_posix()
        for path in sorted((ROOT / "pipeline").rglob("*.py"))
        if any(name.startswith(("daemon.lean", "daemon.status")) for name in imports(path))
    ]
    assert offenders == []

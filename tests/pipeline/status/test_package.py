"""One read side: the status report (``pipeline.status``) is shown by `memd status` and the page only, and
the read API it is built on (``pipeline.store.read``) loads no SQLAlchemy, so the fast paths need no
second reader."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
READERS = ("daemon/cli/status.py", "daemon/cli/status_tables.py", "daemon/ui/")
"""The modules that show `memd status`'s report: its command and the page."""
LIVENESS = "pipeline.status.liveness"
"""What the daemon writes of itself and how its health is judged: the daemon's write side uses it too."""


def imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_only_the_status_command_and_the_page_import_the_status_report() -> None:
    offenders = []
    for path in sorted((ROOT / "daemon").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(READERS):
            continue
        names = {n for n in imports(path) if n == "pipeline.status" or n.startswith("pipeline.status.")}
        if names - {LIVENESS}:
            offenders.append(rel)
    assert offenders == []


def test_the_read_api_loads_no_sqlalchemy() -> None:
    modules = sorted(
        f"pipeline.store.read.{p.stem}"
        for p in (ROOT / "pipeline/store/read").glob("*.py")
        if p.stem != "__init__"
    )
    assert "pipeline.store.read.flags" in modules
    probe = (
        f"import sys, {', '.join(modules)}, pipeline.status.read\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('sqlalchemy', 'pydantic')))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"

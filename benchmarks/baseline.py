"""The baseline memd a benchmark measures beside this one in the same run: a git ref of this
repository (its tree exported to a folder and run with this interpreter's packages, by
``PYTHONPATH``), or a folder holding a memd checkout."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def source(ref: str, into: Path) -> Path | None:
    """The baseline's source folder: ``ref`` itself when it is a folder, else the tree of the git ref
    ``ref`` exported into ``into`` (which must not exist); None for ``none`` or a ref that does not
    resolve (said on stdout)."""
    if ref == "none":
        return None
    if Path(ref).is_dir():
        return Path(ref).resolve()
    tree = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", ref], capture_output=True, check=False
    )
    if tree.returncode != 0:
        print(f"no baseline: git ref {ref!r} not found ({tree.stderr.decode(errors='replace').strip()})")
        return None
    into.mkdir()
    subprocess.run(["tar", "-x", "-C", str(into)], input=tree.stdout, check=True)
    return into

"""The README's Layout names every module of ``daemon/`` and ``pipeline/``, and only modules that exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULE_ROW = re.compile(r"^\| `((?:daemon|pipeline)/[^`*]+\.py)` \|", re.M)


def _layout() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("\n## Layout")
    end = readme.index("\n## ", start + 1)
    return readme[start:end]


def _modules() -> list[str]:
    return sorted(
        str(path.relative_to(ROOT))
        for package in ("daemon", "pipeline")
        for path in (ROOT / package).rglob("*.py")
    )


def _suggested_row(module: str) -> str:
    doc = ast.get_docstring(ast.parse((ROOT / module).read_text(encoding="utf-8"))) or ""
    first = " ".join(doc.split("\n\n")[0].split())
    return f"| `{module}` | {first} |"


def test_every_module_has_a_row_in_the_layout() -> None:
    listed = set(MODULE_ROW.findall(_layout()))
    missing = [m for m in _modules() if m not in listed]
    assert not missing, "add to the README's module table:\n" + "\n".join(map(_suggested_row, missing))


def test_every_module_row_names_a_module_that_exists() -> None:
    gone = [m for m in MODULE_ROW.findall(_layout()) if not (ROOT / m).is_file()]
    assert not gone, gone


def test_the_module_rows_follow_the_tree_order() -> None:
    rows = MODULE_ROW.findall(_layout())
    assert rows == sorted(rows), "keep the README's module table in path order"

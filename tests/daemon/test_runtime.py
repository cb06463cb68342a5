"""The runtime (``daemon/runtime.py``): the one place memd's parts are made, and what each entry
point gets from it: the store opened as this machine, a memory repository checked before anything
is paid for, and a dry run that covers every scope and leaves nothing behind."""

from __future__ import annotations

import ast
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from daemon.cli import cli

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted([*ROOT.glob("daemon/**/*.py"), *ROOT.glob("pipeline/**/*.py")])
FIXTURES = ROOT / "tests" / "fixtures" / "transcripts" / "claude_code" / "projects" / "-home-dev-shop"

CONSTRUCTORS = {"open_store", "build_client", "Redactor", "load_or_create_key"}
"""Calls only the runtime makes (and the packages that define them)."""
HOMES = ("daemon/runtime.py", "pipeline/store/", "pipeline/llm/", "pipeline/redaction/", "pipeline/memory/")
DAEMON_ONLY = {"MemoryRepo"}
"""Constructed by the runtime for every entry point under daemon/ (the pipeline's phases still
resolve ``[paths] memory_dir`` themselves)."""


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def constructions(source: str, names: set[str]) -> list[str]:
    """``name:line`` of each call of one of ``names`` (``f(...)`` or ``module.f(...)``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name in names:
                found.append(f"{name}:{node.lineno}")
    return found


@pytest.mark.parametrize("path", MODULES, ids=_rel)
def test_only_the_runtime_makes_stores_clients_redactors_and_memory_repositories(path: Path) -> None:
    rel = _rel(path)
    if rel.startswith(HOMES):
        return
    names = CONSTRUCTORS | (DAEMON_ONLY if rel.startswith("daemon/") else set())
    assert constructions(path.read_text(), names) == [], f"{rel}: get these from daemon.runtime"


def test_the_check_sees_a_call_by_name_and_through_a_module() -> None:
    source = "from pipeline import store\nasync def f(url):\n    return await store.open_store(url)\nRedactor(b'k')\n"
    assert sorted(constructions(source, CONSTRUCTORS)) == ["Redactor:4", "open_store:3"]

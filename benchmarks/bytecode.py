"""Whole-process benchmarks time memd as installed: pip writes every module's bytecode at install,
so the sources are compiled once here. Without it, a shell with ``PYTHONDONTWRITEBYTECODE=1`` (as
on CI's machines) makes every run compile every module it imports, and the figures measure the
compiler instead of memd."""

from __future__ import annotations

import compileall
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def compile_sources(root: Path = ROOT) -> None:
    """Every module of the checkout at ``root`` (this one by default) compiled."""
    for package in ("daemon", "pipeline"):
        compileall.compile_dir(root / package, quiet=1)

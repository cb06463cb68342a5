"""The layout's rules, checked by reading every module's imports."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULES = sorted([*ROOT.glob("daemon/**/*.py"), *ROOT.glob("pipeline/**/*.py")])


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


# Each library has one home; importing it anywhere else fails this test.
HOMES = {
    "anthropic": ("pipeline/llm/",),
    "httpx2": ("pipeline/llm/",),
    "sqlalchemy": ("pipeline/store/",),
    "alembic": ("pipeline/store/",),
    "apscheduler": ("daemon/schedule.py",),
    "watchfiles": ("daemon/watch.py",),
    "ahocorasick_rs": ("pipeline/redaction/",),
    # git runs only under pipeline/repo (hardened, see pipeline/repo/git_env.py); the service
    # manager (systemctl, launchctl) only from `memd service`.
    "subprocess": ("pipeline/repo/", "daemon/cli_service.py"),
}


@pytest.mark.parametrize("path", MODULES, ids=_rel)
def test_pipeline_never_imports_daemon(path: Path) -> None:
    if _rel(path).startswith("pipeline/"):
        assert not any(name == "daemon" or name.startswith("daemon.") for name in _imports(path))


@pytest.mark.parametrize("path", MODULES, ids=_rel)
def test_each_library_is_imported_only_from_its_home(path: Path) -> None:
    rel = _rel(path)
    for name in _imports(path):
        top = name.split(".")[0]
        homes = HOMES.get(top)
        if homes is not None:
            assert rel.startswith(homes), f"{rel} imports {name}; only {homes} may"


def test_the_import_packages_are_the_checkout() -> None:
    import daemon
    import pipeline

    assert Path(daemon.__file__).resolve().parent == ROOT / "daemon"
    assert Path(pipeline.__file__).resolve().parent == ROOT / "pipeline"


def test_no_pypi_asyncio_dependency() -> None:
    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert not any(
        d.split("[")[0].split("<")[0].split(">")[0].split("=")[0].strip() == "asyncio" for d in deps
    )

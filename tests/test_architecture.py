"""The layout's rules, checked by reading every module's imports (the layers and cycles through
import-linter's contracts in pyproject.toml)."""

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
    "apscheduler": ("daemon/service/schedule.py",),
    "watchfiles": ("daemon/service/watch.py",),
    "ahocorasick_rs": ("pipeline/redaction/",),
    # the web page: its stack is imported only under daemon/ui/ (the daemon loads it with [ui] enabled)
    "starlette": ("daemon/ui/",),
    "uvicorn": ("daemon/ui/",),
    "jinja2": ("daemon/ui/",),
    "markupsafe": ("daemon/ui/",),
    "markdown_it": ("daemon/ui/",),
    # `memd mcp`: the MCP SDK only under daemon/mcp/ (its import is most of the server's start)
    "mcp": ("daemon/mcp/",),
    # git runs only under pipeline/gitrepo (hardened, see pipeline/gitrepo/git_env.py); the service
    # manager (systemctl, launchctl) only from `memd service`.
    "subprocess": ("pipeline/gitrepo/", "daemon/cli/service.py"),
}


@pytest.mark.parametrize("path", MODULES, ids=_rel)
def test_each_library_is_imported_only_from_its_home(path: Path) -> None:
    rel = _rel(path)
    for name in _imports(path):
        top = name.split(".")[0]
        homes = HOMES.get(top)
        if homes is not None:
            assert rel.startswith(homes), f"{rel} imports {name}; only {homes} may"


@pytest.mark.parametrize("path", MODULES, ids=_rel)
def test_only_the_llm_package_reaches_the_sdk_object(path: Path) -> None:
    """Callers know the model client by ``pipeline.llm.protocol.ModelClient``; its ``.sdk`` stays inside."""
    if _rel(path).startswith("pipeline/llm/"):
        return
    tree = ast.parse(path.read_text(), filename=str(path))
    assert not [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "sdk"]


@pytest.mark.parametrize("path", MODULES, ids=_rel)
def test_only_the_memory_packages_run_git(path: Path) -> None:
    """Everyone else asks ``MemoryRepo`` for an intent (stage, what changed, commit, land...). The
    memory as files (``pipeline/memory``: its history, who holds a session, a person's steering)
    still asks ``MemoryRepo.git`` directly."""
    if _rel(path).startswith(("pipeline/gitrepo/", "pipeline/memory/")):
        return
    tree = ast.parse(path.read_text(), filename=str(path))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    names = [c.func.attr if isinstance(c.func, ast.Attribute) else getattr(c.func, "id", "") for c in calls]
    assert not [name for name in names if name in ("git", "run_git")]


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


def test_the_import_contracts_hold() -> None:
    """``[tool.importlinter]`` in pyproject.toml: pipeline/'s layers (each imports only those below
    it, every module of pipeline/ in one layer; docs/architecture.md), pipeline/ never importing
    daemon/, and no two sibling packages or modules anywhere importing each other (no cycle)."""
    from importlinter.cli import EXIT_STATUS_SUCCESS, lint_imports

    # prints each contract kept or broken, and which import breaks it, in the captured output
    assert lint_imports(str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True) == EXIT_STATUS_SUCCESS


def test_the_architecture_page_states_the_daemon_layer_order_of_the_contract() -> None:
    import re
    import tomllib

    [contract] = [
        c
        for c in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
        if c["id"] == "daemon-layers"
    ]
    # bottom up; a layer of several modules joined by ":" is named by its first
    layers = [layer.split(":")[0].replace(" ", "") for layer in reversed(contract["layers"])]
    page = (ROOT / "docs" / "architecture.md").read_text()
    [stated] = re.findall(r"^daemon: (.+?)\n\n", page, flags=re.M | re.S)
    stated = " ".join(stated.split())
    assert [layer.replace("`", "").replace(" ", "") for layer in stated.split(" < ")] == layers


def test_the_architecture_page_states_the_layer_order_of_the_contract() -> None:
    import re
    import tomllib

    [contract] = [
        c
        for c in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
        if c["id"] == "pipeline-layers"
    ]
    layers = [layer.replace(" ", "") for layer in reversed(contract["layers"][:-1])]  # bottom up, no kernel
    readme = (ROOT / "docs" / "architecture.md").read_text()
    [stated] = re.findall(r"^kernel < (.+?)\n\n", readme, flags=re.M | re.S)
    stated = " ".join(stated.split())
    assert [layer.replace("`", "").replace(" ", "") for layer in stated.split(" < ")] == layers

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
    # the web page: its stack is imported only under daemon/ui/ (the daemon loads it with [ui] enabled)
    "starlette": ("daemon/ui/",),
    "uvicorn": ("daemon/ui/",),
    "jinja2": ("daemon/ui/",),
    "markupsafe": ("daemon/ui/",),
    "markdown_it": ("daemon/ui/",),
    # git runs only under pipeline/repo (hardened, see pipeline/memory/git_env.py); the service
    # manager (systemctl, launchctl) only from `memd service`.
    "subprocess": ("pipeline/memory/", "daemon/cli/service.py"),
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


@pytest.mark.parametrize("path", MODULES, ids=_rel)
def test_only_the_llm_package_reaches_the_sdk_object(path: Path) -> None:
    """Callers know the model client by ``pipeline.llm.protocol.ModelClient``; its ``.sdk`` stays inside."""
    if _rel(path).startswith("pipeline/llm/"):
        return
    tree = ast.parse(path.read_text(), filename=str(path))
    assert not [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "sdk"]


@pytest.mark.parametrize("path", MODULES, ids=_rel)
def test_only_the_memory_package_runs_git(path: Path) -> None:
    """Everyone else asks ``MemoryRepo`` for an intent (stage, what changed, commit, land...)."""
    if _rel(path).startswith("pipeline/memory/"):
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


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph() -> dict[str, set[str]]:
    """Every module of daemon/ and pipeline/ to the modules it imports, lazy imports included
    (``from package import module`` counts as an import of that module)."""
    modules = {_module_name(path): path for path in MODULES}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                edges.update(alias.name for alias in node.names if alias.name in modules)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    target = f"{node.module}.{alias.name}"
                    if target in modules:
                        edges.add(target)
                    elif node.module in modules:
                        edges.add(node.module)
        graph[name] = edges - {name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles() -> None:
    assert _cycles(_import_graph()) == []


def test_the_cycle_check_sees_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]

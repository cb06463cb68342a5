"""The runtime (``daemon/runtime.py``): the one place memd's parts are made, and what each entry
point gets from it: the store opened as this machine, a memory repository checked before anything
is paid for, and a dry run that covers every scope and leaves nothing behind."""

from __future__ import annotations

import ast
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from daemon.cli import cli
from tests.configs import write_config
from tests.fakes.anthropic_api import FakeAnthropicAPI

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted([*ROOT.glob("daemon/**/*.py"), *ROOT.glob("pipeline/**/*.py")])
FIXTURES = ROOT / "tests" / "fixtures" / "transcripts" / "claude_code" / "projects" / "-home-dev-shop"

RUNTIME = "daemon/runtime.py"
HOMES = {
    "open_store": "pipeline/store/",
    "build_client": "pipeline/llm/",
    "Redactor": "pipeline/redaction/",
    "load_or_create_key": "pipeline/redaction/",
    "MemoryRepo": "pipeline/memory/",
}
"""Calls only the runtime makes, each with the package that defines it (which may call it too)."""
CONSTRUCTORS = set(HOMES)


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def constructions(source: str, names: set[str]) -> list[str]:
    """``name:line`` of each call of one of ``names`` (``f(...)`` or ``module.f(...)``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = (
                func.id
                if isinstance(func, ast.Name)
                else func.attr
                if isinstance(func, ast.Attribute)
                else ""
            )
            if name in names:
                found.append(f"{name}:{node.lineno}")
    return found


@pytest.mark.parametrize("path", MODULES, ids=_rel)
def test_only_the_runtime_makes_stores_clients_redactors_and_memory_repositories(path: Path) -> None:
    rel = _rel(path)
    if rel == RUNTIME:
        return
    names = {name for name, home in HOMES.items() if not rel.startswith(home)}
    assert constructions(path.read_text(), names) == [], f"{rel}: get these from daemon.runtime"


def test_the_check_sees_a_call_by_name_and_through_a_module() -> None:
    source = "from pipeline import store\nasync def f(url):\n    return await store.open_store(url)\nRedactor(b'k')\n"
    assert sorted(constructions(source, CONSTRUCTORS)) == ["Redactor:4", "open_store:3"]


def _config(tmp_path: Path, **extra: str) -> Path:
    """A config whose paths are all under ``tmp_path``; Claude Code sessions of one project in it."""
    root = tmp_path / "claude" / "-home-dev-shop"
    root.mkdir(parents=True)
    for src in FIXTURES.glob("*.jsonl"):
        shutil.copyfile(src, root / src.name)
    return write_config(
        tmp_path,
        "[sources.claude_code]\n"
        f'root = "{tmp_path / "claude"}"\n'
        "[memories]\nmin_rollout_idle_hours = 0\nmax_rollout_age_days = 36500\n"
        + "".join(f"{line}\n" for line in extra.values()),
        state_db=tmp_path / "state" / "state.db",
    )


def test_a_dry_run_on_a_fresh_machine_leaves_no_store_and_no_redaction_key(tmp_path: Path) -> None:
    config = _config(tmp_path)
    done = CliRunner().invoke(cli, ["--config", str(config), "run", "--once", "--dry-run"])
    assert done.exit_code == 0, done.output
    assert "would" in done.output  # it did look: sessions to extract, scopes to consolidate
    assert not (tmp_path / "state").exists(), sorted(p.name for p in (tmp_path / "state").iterdir())
    assert not (tmp_path / "memory").exists()


async def test_a_dry_run_would_consolidate_the_global_scope_too(tmp_path: Path) -> None:
    from daemon.app import build
    from daemon.config import load_settings
    from daemon.runtime import dry_run_settings
    from pipeline.consolidate.dry import DryConsolidation

    settings = load_settings(_config(tmp_path)).settings
    with dry_run_settings(settings) as dry:
        daemon = build(dry, env={}, watch=False, dry_run=True)
        result = await daemon.run_once(dry_run=True, install_signals=False)
    [consolidate] = [r for r in result.results if r.name == "consolidate"]
    assert isinstance(consolidate.report, DryConsolidation), consolidate
    scopes = [w.scope for w in consolidate.report.would_consolidate]
    assert scopes[0] == "global", scopes  # every project session's memories about the user feed it
    assert len(scopes) == 2, scopes
    assert scopes[1].startswith("projects/"), scopes
    assert all(
        w.estimated_tokens > 0 and w.estimated_cost_usd > 0 for w in consolidate.report.would_consolidate
    )


async def test_an_unwritable_memory_repository_fails_consolidation_before_any_model_call(
    tmp_path: Path, fake_api: FakeAnthropicAPI
) -> None:
    from daemon.app import build
    from pipeline.clock import FakeClock
    from pipeline.gitrepo.repository import LOCK_FILE, MemoryRepo
    from pipeline.machine import machine_id
    from pipeline.redaction import Redactor
    from pipeline.store import open_store
    from tests.fakes.anthropic_api import ScriptedResponder
    from tests.fakes.fixtures import FAKE_API_KEY
    from tests.pipeline.consolidate.support import Env, make_settings, write_memory

    fake_api.responder = ScriptedResponder(write_memory())  # a consolidation that would land
    settings = make_settings(tmp_path, fake_api.base_url)
    store = await open_store(settings.paths.state_db, machine=machine_id(settings.paths.state_dir))
    try:
        env = Env(
            tmp_path, store, FakeClock(datetime.now(UTC)), fake_api, settings, None, Redactor(b"k" * 32)
        )  # type: ignore[arg-type]
        await env.add_extract("sess-1")
    finally:
        await store.close()
    memory = Path(settings.paths.memory_dir)
    await MemoryRepo(memory).ensure()
    (memory / ".git" / LOCK_FILE).mkdir()  # the lock cannot be opened (as an unwritable .git would do)

    for _cycle in range(2):  # and the next cycle does not pay for it either
        daemon = build(settings, env={"ANTHROPIC_API_KEY": FAKE_API_KEY}, watch=False)
        result = await daemon.run_once(install_signals=False)
        [consolidate] = [r for r in result.results if r.name == "consolidate"]
        assert consolidate.outcome == "failed", consolidate
        assert consolidate.error is not None
        assert f"the memory repository {memory} cannot be written" in consolidate.error
        assert str(memory / ".git" / LOCK_FILE) in consolidate.error
        assert fake_api.message_requests() == []


async def test_the_store_is_this_machines_and_the_model_client_follows_the_settings(tmp_path: Path) -> None:
    from daemon.config import load_settings
    from daemon.runtime import Runtime
    from pipeline.errors import NoAPIKey
    from pipeline.machine import read_id
    from tests.fakes.fixtures import FAKE_API_KEY

    first = load_settings(_config(tmp_path)).settings
    current = [first]
    async with Runtime.open(lambda: current[-1], env={}) as rt:
        assert rt.store.machine == read_id(first.paths.state_dir)
        with pytest.raises(NoAPIKey):
            await rt.llm()
        assert await rt.llm_or_none() is None
        rt.env = {"ANTHROPIC_API_KEY": FAKE_API_KEY}
        client = await rt.llm()
        assert await rt.llm() is client  # made once
        current.append(first.model_copy())  # a reload
        assert await rt.llm() is not client


async def test_without_ssh_keygen_commits_are_unsigned_unless_memory_travels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A machine with no ``ssh-keygen`` keeps consolidating (nothing checks a signature where memory
    does not travel); with a ``[sync] remote`` its commits fail, naming ``ssh-keygen``."""
    from daemon.config import load_settings
    from daemon.runtime import memory_repo
    from pipeline.errors import MemoryRepoError

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    git = shutil.which("git")
    assert git is not None
    (bin_dir / "git").symlink_to(git)
    monkeypatch.setenv("PATH", str(bin_dir))

    alone = load_settings(write_config(tmp_path)).settings
    repo = memory_repo(alone)
    assert repo.signer is None
    await repo.ensure()
    await repo.git("commit", "-q", "--allow-empty", "-m", "memd: a run")
    assert "gpgsig" not in await repo.git("cat-file", "-p", "HEAD")

    (tmp_path / "served").mkdir()
    travels = load_settings(write_config(tmp_path, f'[sync]\nremote = "{tmp_path / "served"}"\n')).settings
    signed = memory_repo(travels)
    assert signed.signer is not None
    with pytest.raises(MemoryRepoError, match="ssh-keygen"):
        await signed.git("commit", "-q", "--allow-empty", "-m", "memd: another run")

    monkeypatch.undo()
    assert memory_repo(alone).signer is not None  # ssh-keygen is back: every commit is signed

"""Within every agent's cut, by construction: a file over what its agent loads is never published;
the previous version stays and the publication says why."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.clock import FakeClock
from pipeline.publish.plan import Plan
from pipeline.publish.run import publish_all
from pipeline.publish.targets.limits import enforce, limits
from pipeline.publish.targets.registry import targets
from pipeline.store import Store
from pipeline.store.publications import load_publications
from tests.conftest import sqlite_only
from tests.pipeline.publish.support import Env, add_scope, write_scope


def test_every_target_name_has_its_agents_cut() -> None:
    names = {name for target in targets() for name in target.names}
    assert names == set(limits())


@pytest.mark.parametrize(
    ("target", "text", "said"),
    [
        ("claude_code", "- line\n" * 201, "201 lines (cut: 200)"),
        ("claude_code", "x" * 25_001, "25,001 bytes (cut: 25,000)"),
        ("qwen_code", "é" * 25_001, "25,001 characters (cut: 25,000)"),
        ("codex", "word " * 2_000, "tokens (cut: 2,500)"),
        ("agents_md", "x" * 32_769, "32,769 bytes (cut: 32,768)"),
    ],
)
def test_a_file_over_its_agents_cut_fails_the_plan_and_writes_nothing(
    tmp_path: Path, target: str, text: str, said: str
) -> None:
    limit = limits()[target]
    plan = Plan(target=target, scope="global", location=tmp_path)
    plan.change(tmp_path / limit.file, text.encode(), None)
    plan.change(tmp_path / "memd-topic.md", b"a topic file, opened on demand\n", None)
    enforce([plan])
    assert plan.changes == []
    assert plan.error is not None
    assert said in plan.error
    assert "previously published version is kept" in plan.error


def test_taking_memds_copy_back_is_never_held_up_by_the_cut(tmp_path: Path) -> None:
    plan = Plan(target="agents_md", scope="global", location=tmp_path, withdraw=True)
    plan.change(tmp_path / "AGENTS.md", b"x" * 40_000, b"x" * 41_000)  # the team's own text, over it
    enforce([plan])
    assert plan.error is None
    assert len(plan.changes) == 1


def test_shrinking_memds_part_of_a_file_already_over_the_cut_is_never_held_up(tmp_path: Path) -> None:
    plan = Plan(target="claude_code", scope="global", location=tmp_path)
    plan.change(
        tmp_path / "MEMORY.md", b"- own line\n" * 230, b"- own line\n" * 230 + b"- memd's block\n" * 5
    )
    enforce([plan])
    assert plan.error is None
    grown = Plan(target="claude_code", scope="global", location=tmp_path)
    grown.change(tmp_path / "MEMORY.md", b"- own line\n" * 236, b"- own line\n" * 235)
    enforce([grown])
    assert grown.error is not None


def test_a_file_within_its_cut_is_left_to_publish(tmp_path: Path) -> None:
    plan = Plan(target="claude_code", scope="global", location=tmp_path)
    plan.change(tmp_path / "MEMORY.md", b"- line\n" * 200, None)
    enforce([plan])
    assert plan.error is None
    assert len(plan.changes) == 1


@sqlite_only
async def test_an_agents_md_memds_block_would_push_over_the_cut_keeps_the_previous_version(
    env: Env, store: Store, clock: FakeClock
) -> None:
    project = env.project("app")
    scope = await add_scope(store, str(project), clock.now())
    write_scope(env.memory_dir, scope, summary="Digest.")
    settings = env.settings(claude_code=False, gemini=False, agents_md=True)
    agents = project / "AGENTS.md"
    agents.write_text("# The team's rules\n")
    [first] = (await publish_all(store, settings, clock)).results
    assert first.outcome == "published"
    published = agents.read_text()
    assert "memd:begin" in published

    # The team's own text grows to the cut: memd's block would sit past what Codex loads.
    grown = published.replace("# The team's rules\n", "# The team's rules\n" + "- a rule\n" * 4_000)
    agents.write_text(grown)
    write_scope(env.memory_dir, scope, summary="Digest, newer.")
    [second] = (await publish_all(store, settings, clock)).results
    assert second.outcome == "failed"
    assert "over what Codex, Pi, OpenCode, Copilot CLI, Qwen Code, OpenHands and Cline loads of it" in (
        second.reason or ""
    )
    assert agents.read_text() == grown  # nothing written
    (row,) = await load_publications(store)
    assert row.outcome == "failed"
    assert "cut: 32,768" in (row.reason or "")

"""The duplicate check: same normalised name, bodies that mostly overlap, a topic listed twice."""

from __future__ import annotations

from pathlib import Path

from pipeline.checks import duplicates
from pipeline.memory.listing import list_scope

BODY = (
    "Run the test suite with make test from the repository root. The suite needs Docker running, "
    "and the integration tests need the fixtures database seeded first with make seed."
)


def topic(name: str, body: str) -> str:
    return f"---\nname: {name}\ndescription: {name}, when it matters\ntype: project\n---\n{body}\n"


def scope(tmp_path: Path, files: dict[str, str], index: str | None = None) -> list[str]:
    for rel, text in files.items():
        (tmp_path / rel).write_text(text)
    links = index if index is not None else "".join(f"- [{r}]({r}) — about {r}\n" for r in files)
    (tmp_path / "MEMORY.md").write_text("# Index\n" + links)
    return duplicates.check(tmp_path, list_scope(tmp_path))


def test_two_topics_with_one_name_once_normalised_are_duplicates(tmp_path: Path) -> None:
    found = scope(
        tmp_path, {"a.md": topic("Test conventions", "One."), "b.md": topic("test-conventions!", "Two.")}
    )
    assert len(found) == 1
    assert found[0].startswith("a.md: duplicate:")
    assert "b.md" in found[0]
    assert duplicates.count(found) == 1


def test_a_body_copied_into_a_longer_topic_is_a_duplicate(tmp_path: Path) -> None:
    longer = BODY + " Deploys go through the staging cluster first, then production after a day of soak."
    found = scope(tmp_path, {"testing.md": topic("Testing", BODY), "ops.md": topic("Operations", longer)})
    assert len(found) == 1
    assert "ops.md" in found[0]
    assert "testing.md" in found[0]


def test_topics_sharing_a_few_words_are_not_duplicates(tmp_path: Path) -> None:
    other = (
        "Deploy with make deploy from the repository root after the release branch is tagged; "
        "production takes the image the staging cluster ran for a day."
    )
    assert scope(tmp_path, {"testing.md": topic("Testing", BODY), "deploy.md": topic("Deploy", other)}) == []


def test_short_bodies_are_judged_by_name_only(tmp_path: Path) -> None:
    assert scope(tmp_path, {"a.md": topic("A", "Use pnpm."), "b.md": topic("B", "Use pnpm.")}) == []


def test_a_topic_the_index_lists_twice_is_a_finding(tmp_path: Path) -> None:
    index = "- [Testing](testing.md) — tests\n- [Tests again](./testing.md) — tests\n"
    found = scope(tmp_path, {"testing.md": topic("Testing", BODY)}, index)
    assert found == ["MEMORY.md: duplicate: testing.md is listed on lines 2, 3: list each topic once"]


def test_the_overlap_is_the_share_of_the_smaller_set() -> None:
    a = duplicates.shingles("one two three four five")
    b = duplicates.shingles("one two three four five six seven")
    assert duplicates.overlap(a, b) == 1.0
    assert duplicates.overlap(a, frozenset()) == 0.0

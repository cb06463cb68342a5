"""Frontmatter, validation, provenance and the materialized inputs of one scope folder."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.checks.provenance import apply_provenance, snapshot_topics
from pipeline.checks.validate import validate_scope
from pipeline.layout import Caps, estimate_tokens
from pipeline.memory import frontmatter
from pipeline.memory.inputs import InputRecord, materialize
from pipeline.memory.listing import index_links
from pipeline.redaction import Redactor

CAPS = Caps(summary_max_tokens=100, topic_max_bytes=1_000, max_topic_files=100)
TODAY = date(2026, 11, 1)


def topic(name: str = "Testing", body: str = "Run `make test`.", *, extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: how tests run\ntype: project\n{extra}---\n{body}\n"


def scope(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "scope"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


# ---------------------------------------------------------------- frontmatter


def test_frontmatter_round_trips_and_memd_owns_provenance() -> None:
    parsed = frontmatter.parse(topic(extra='created: 2020-01-01\nsources: ["a", "b"]\nexpires: 2027-01-31\n'))
    assert parsed.meta.name == "Testing"
    assert parsed.meta.type == "project"
    assert parsed.meta.sources == ("a", "b")
    assert parsed.meta.expires == date(2027, 1, 31)
    stamped = parsed.meta.with_provenance(created=TODAY, updated=TODAY, sources=("z", "a", "z"))
    text = frontmatter.render(stamped, parsed.body)
    again = frontmatter.parse(text)
    assert again.meta == stamped
    assert again.body == parsed.body
    assert 'sources: ["a", "z"]' in text


@given(
    name=st.text(min_size=1, max_size=60).filter(lambda s: s.strip() and "\n" not in s and "\r" not in s),
    description=st.text(min_size=1, max_size=80).filter(
        lambda s: s.strip() and "\n" not in s and "\r" not in s
    ),
    sources=st.lists(st.text(min_size=1, max_size=20), max_size=4),
)
def test_any_name_description_and_sources_survive_rendering(
    name: str, description: str, sources: list[str]
) -> None:
    meta = frontmatter.Frontmatter(name=name.strip(), description=description.strip(), type="user")
    meta = meta.with_provenance(created=TODAY, updated=TODAY, sources=tuple(sources))
    assert frontmatter.parse(frontmatter.render(meta, "body\n")).meta == meta


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("no frontmatter\n", "must start with a frontmatter block"),
        ("---\nname: x\n", "not closed"),
        ("---\nname: x\nname: y\n---\n", "appears twice"),
        ("---\njust text\n---\n", "not 'key: value'"),
        ("---\ncreated: yesterday\n---\n", "must be a date"),
    ],
)
def test_malformed_frontmatter_is_refused_with_a_reason(text: str, problem: str) -> None:
    with pytest.raises(frontmatter.FrontmatterError, match=problem):
        frontmatter.parse(text)


SPELLINGS = {
    "json flow list": 'sources: ["s-1", "s-2"]\n',
    "plain flow list": "sources: [s-1, 's-2']\n",
    "block list": 'sources:\n  - s-1\n- "s-2"\n',
}


@pytest.mark.parametrize("spelling", SPELLINGS.values(), ids=SPELLINGS.keys())
@pytest.mark.parametrize("strict", [True, False], ids=["checked", "published"])
def test_both_list_spellings_give_the_same_sources_to_every_reader(spelling: str, strict: bool) -> None:
    """One parser: the checks (strict) and publishing (lenient) read a flow list and a block list alike."""
    text = f"---\nname: N\ndescription: D\ntype: project\n{spelling}updated: 2026-11-03\n---\nbody\n"
    meta = frontmatter.parse(text, strict=strict).meta
    assert (meta.name, meta.sources, meta.updated) == ("N", ("s-1", "s-2"), date(2026, 11, 3))


def test_publishing_reads_what_it_can_of_a_malformed_frontmatter(tmp_path: Path) -> None:
    """A hand-edited topic file is published with what can be read; the checks refuse it."""
    from pipeline.publish.memfiles import read_topic

    text = (
        "---\r\nname: Hand edited\r\nnot a key line\r\ndescription: kept\r\ndescription: again\r\n"
        "updated: 2026-11-03T10:00:00\r\nexpires: someday\r\nsources:\r\n- s-1\r\n---\r\nbody\r\n"
    )
    with pytest.raises(frontmatter.FrontmatterError):
        frontmatter.parse(text)
    path = tmp_path / "hand.md"
    path.write_bytes(text.encode())
    topic = read_topic(path)
    assert topic is not None
    assert (topic.name, topic.description, topic.sources) == ("Hand edited", "kept", ("s-1",))
    assert (topic.updated_date, topic.expires) == ("2026-11-03", None)
    path.write_text("no frontmatter at all\n")
    topic = read_topic(path)
    assert topic is not None
    assert (topic.name, topic.description, topic.sources) == ("hand", "", ())


def test_schema_problems_are_named() -> None:
    meta = frontmatter.parse("---\nname: \ndescription: d\ntype: opinion\ntags: x\n---\n").meta
    problems = " | ".join(frontmatter.problems(meta))
    assert "unknown frontmatter keys ['tags']" in problems
    assert "missing 'name'" in problems
    assert "'type' must be one of user, feedback, project, reference" in problems
    assert "missing 'created'/'updated'" in problems


# ---------------------------------------------------------------- validation


def valid_files() -> dict[str, str]:
    stamped = topic(extra='created: 2026-11-01\nupdated: 2026-11-01\nsources: ["s"]\n')
    return {
        "MEMORY.md": "# Index\n\n- [Testing](testing.md) — how tests run\n- [Raw](raw_memories.md)\n",
        "memory_summary.md": "Short.\n",
        "testing.md": stamped,
        "raw_memories.md": "# Raw memories\n",
        "rollout_summaries/a.md": "session: s\n",
    }


def test_a_sound_scope_has_no_findings(tmp_path: Path) -> None:
    assert validate_scope(scope(tmp_path, valid_files()), CAPS, Redactor(b"k" * 16)) == []


def test_every_rule_is_checked(tmp_path: Path) -> None:
    files = valid_files()
    files["MEMORY.md"] = "".join(f"- line {i}\n" for i in range(201)) + "- [Gone](gone.md)\n- [Up](../x.md)\n"
    files["memory_summary.md"] = "word " * 200
    files["big.md"] = topic(body="x" * 2_000)
    files["deploy.md"] = topic(
        body='password = "hunter2hunter2Zq9"', extra="created: 2026-11-01\nupdated: 2026-11-01\n"
    )
    root = scope(tmp_path, files)
    (root / "link.md").symlink_to(root / "testing.md")
    (root / ".hidden").write_text("x")
    findings = "\n".join(validate_scope(root, CAPS, Redactor(b"k" * 16)))
    assert "MEMORY.md has 203 lines, over the cap of 200" in findings
    assert "links to 'gone.md', which is not a file of this scope" in findings
    assert "links to '../x.md'" in findings
    assert "memory_summary.md is about" in findings
    assert "over the cap of 100" in findings
    assert "big.md is" in findings
    assert "over the topic cap of 1000" in findings
    assert "testing.md is not listed in MEMORY.md" in findings
    assert "deploy.md: the secret gate found a password at line 8" in findings
    assert "hunter2" not in findings
    assert "link.md is a symlink" in findings
    assert ".hidden is hidden" in findings


def test_index_links_understand_markdown_forms() -> None:
    text = "- [A](a.md) — x\n- [B](<b c.md>)\n- [C](./c.md#part) and [web](https://x.y/z.md)\n"
    assert index_links(text) == [(1, "a.md"), (2, "b c.md"), (3, "c.md")]


def test_token_estimate_errs_high() -> None:
    assert estimate_tokens("abcd" * 100) >= 100


# ---------------------------------------------------------------- provenance


def test_provenance_is_stamped_by_memd_not_the_model(tmp_path: Path) -> None:
    old = topic("Old", extra='created: 2026-10-01\nupdated: 2026-10-01\nsources: ["s1"]\n')
    root = scope(
        tmp_path,
        {
            "old.md": old,
            "kept.md": old.replace("Old", "Kept"),
            "MEMORY.md": "- [o](old.md)\n- [k](kept.md)\n",
        },
    )
    before = snapshot_topics(root)
    # The model edits old.md and claims provenance; it creates new.md; it renames kept.md.
    (root / "old.md").write_text(topic("Old", "changed", extra='created: 1999-01-01\nsources: ["made-up"]\n'))
    (root / "new.md").write_text(topic("New"))
    report = apply_provenance(
        root, before, today=TODAY, run_sources={"s2"}, live_sources={"s1", "s2"}, forgotten=set(), renames={}
    )
    old_meta = frontmatter.parse((root / "old.md").read_text()).meta
    assert old_meta.created == date(2026, 10, 1)
    assert old_meta.updated == TODAY
    assert old_meta.sources == ("s1", "s2")
    new_meta = frontmatter.parse((root / "new.md").read_text()).meta
    assert new_meta.created == TODAY
    assert new_meta.sources == ("s2",)
    kept = frontmatter.parse((root / "kept.md").read_text()).meta
    assert kept.updated == date(2026, 10, 1)
    assert kept.sources == ("s1",)
    assert sorted(report.stamped) == ["new.md", "old.md"]


def test_topics_from_forgotten_sessions_and_expired_topics_are_removed(tmp_path: Path) -> None:
    files = {
        "only-forgotten.md": topic(
            "A", extra='created: 2026-10-01\nupdated: 2026-10-01\nsources: ["gone"]\n'
        ),
        "mixed.md": topic("B", extra='created: 2026-10-01\nupdated: 2026-10-01\nsources: ["gone", "kept"]\n'),
        "handmade.md": topic("C", extra="created: 2026-10-01\nupdated: 2026-10-01\n"),
        "expired.md": topic(
            "D", extra='created: 2026-10-01\nupdated: 2026-10-01\nsources: ["kept"]\nexpires: 2026-10-31\n'
        ),
        "MEMORY.md": "# I\n- [A](only-forgotten.md)\n- [B](mixed.md)\n- [C](handmade.md)\n- [D](expired.md)\n",
    }
    root = scope(tmp_path, files)
    before = snapshot_topics(root)
    report = apply_provenance(
        root, before, today=TODAY, run_sources=set(), live_sources={"kept"}, forgotten={"gone"}, renames={}
    )
    assert report.removed == {"only-forgotten.md": "forgotten", "expired.md": "expired"}
    assert frontmatter.parse((root / "mixed.md").read_text()).meta.sources == ("kept",)
    assert (root / "handmade.md").exists()
    assert (root / "MEMORY.md").read_text() == "# I\n- [B](mixed.md)\n- [C](handmade.md)\n"


def test_a_renamed_topic_keeps_its_creation_date_and_sources(tmp_path: Path) -> None:
    old = topic("A", extra='created: 2026-09-01\nupdated: 2026-09-01\nsources: ["s1"]\n')
    root = scope(tmp_path, {"a.md": old})
    before = snapshot_topics(root)
    (root / "a.md").rename(root / "b.md")
    (root / "b.md").write_text(old.replace("Run", "Now run"))
    apply_provenance(
        root,
        before,
        today=TODAY,
        run_sources={"s2"},
        live_sources={"s1", "s2"},
        forgotten=set(),
        renames={"b.md": "a.md"},
    )
    meta = frontmatter.parse((root / "b.md").read_text()).meta
    assert meta.created == date(2026, 9, 1)
    assert meta.sources == ("s1", "s2")


# ---------------------------------------------------------------- inputs


def record(i: int, session: str, slug: str = "fix login") -> InputRecord:
    at = datetime(2026, 10, i, 9, tzinfo=UTC)
    return InputRecord(
        i, session, "codex", "/p", "projects/p-1", slug, f"summary {i}", f"raw {i}", at, at, at
    )


def test_inputs_are_materialized_with_stable_names_and_stale_ones_pruned(tmp_path: Path) -> None:
    root = tmp_path / "s"
    root.mkdir()
    materialize(root, [record(1, "a"), record(2, "b", slug="Ünïcode / slug!!")], clean=str.upper)
    names = sorted(p.name for p in (root / "rollout_summaries").iterdir())
    assert names[0].startswith("2026-10-01T09-00-00-")
    assert names[0].endswith("-fix-login.md")
    assert names[1].endswith("-n-code-slug.md")
    raw = (root / "raw_memories.md").read_text()
    assert raw.index("SESSION `A`") < raw.index("SESSION `B`")  # oldest first; ``clean`` ran over it
    materialize(root, [record(2, "b", slug="Ünïcode / slug!!")])
    assert len(list((root / "rollout_summaries").iterdir())) == 1
    assert "`a`" not in (root / "raw_memories.md").read_text()
    assert record(2, "b").stem == record(2, "b").stem


# ---------------------------------------------------------------- how many topics a scope may hold


def _many_topics(tmp_path: Path, count: int, *, per_line: int = 1) -> Path:
    names = [f"t{i:04d}.md" for i in range(count)]
    links = [f"[{n}]({n})" for n in names]
    lines = [" ".join(links[i : i + per_line]) for i in range(0, count, per_line)]
    files = {n: topic(name=n, extra="created: 2026-11-01\nupdated: 2026-11-01\n") for n in names}
    files["MEMORY.md"] = "\n".join(f"- {line}" for line in lines) + "\n"
    files["memory_summary.md"] = "digest\n"
    return scope(tmp_path, files)


def test_a_scope_over_its_topic_file_cap_is_refused_with_the_reason(tmp_path: Path) -> None:
    caps = Caps(summary_max_tokens=100, topic_max_bytes=1_000, max_topic_files=10)
    assert validate_scope(_many_topics(tmp_path / "ok", 10), caps, None) == []
    findings = validate_scope(_many_topics(tmp_path / "over", 11), caps, None)
    assert findings == ["the scope has 11 topic files, over the cap of 10: merge related topics"]


def test_the_default_cap_stops_a_flood_of_topic_files(tmp_path: Path) -> None:
    # 1,500 topic files behind an index of 15 lines of 100 links: under the line cap, over the file cap.
    findings = validate_scope(_many_topics(tmp_path, 1_500, per_line=100), CAPS, None)
    assert any("1500 topic files, over the cap" in f for f in findings)


def test_an_index_line_links_one_topic(tmp_path: Path) -> None:
    root = _many_topics(tmp_path, 4, per_line=2)
    findings = validate_scope(root, CAPS, None)
    assert findings == [
        "MEMORY.md line 1 links to 2 files: one line per topic file",
        "MEMORY.md line 2 links to 2 files: one line per topic file",
    ]

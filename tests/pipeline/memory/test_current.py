"""Newer wins, by rule: a value that changed between a scope's inputs is given to phase 2 in date
order with the newest marked current, and a topic still stating a superseded value is a finding."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from pipeline.memory.current import StatedValue, stated_values, subject_key, superseded_findings
from pipeline.memory.inputs import InputRecord, about_the_user, changes_of, materialize

PORT = "staging-port"


def record(n: int, day: int, value: str, *, key: str = PORT) -> InputRecord:
    at = datetime(2026, 11, day, 9, 0, tzinfo=UTC)
    return InputRecord(
        n,
        f"s{n}",
        "claude_code",
        "/p",
        "projects/p",
        f"slug {n}",
        f"summary {n}",
        f"- port {value}",
        at,
        at,
        at,
        values=(StatedValue(key, value),),
    )


def test_the_same_key_is_the_same_thing_and_a_memory_without_a_key_is_keyed_by_its_name() -> None:
    memories = [
        {"key": "Staging Port", "value": " 8443 ", "name": "Port"},
        {"key": "", "value": "pnpm", "name": "Package manager!"},
        {"key": "no-value", "value": "", "name": "x"},
        "not a memory",
    ]
    assert stated_values(memories) == (StatedValue(PORT, "8443"), StatedValue("package-manager", "pnpm"))
    assert subject_key("  The staging/port ") == "the-staging-port"


def test_values_are_ordered_by_the_date_they_were_stated_and_the_newest_is_current() -> None:
    # given out of order (by id), stated on the 3rd, the 1st and the 2nd
    [change] = changes_of(
        [record(1, 3, "8443"), record(2, 1, "8000"), record(3, 2, "8001"), record(4, 2, "x", key="other")]
    )
    assert [s.value for s in change.statements] == ["8000", "8001", "8443"]
    assert change.current.session == "s1"
    assert [s.value for s in change.superseded] == ["8000", "8001"]


def test_the_same_value_stated_again_is_no_change() -> None:
    assert changes_of([record(1, 1, "8443"), record(2, 2, "8443.")]) == []


def test_raw_memories_opens_with_the_changed_values_newest_marked_current(tmp_path: Path) -> None:
    materialize(tmp_path, [record(1, 3, "8443"), record(2, 1, "8000"), record(3, 2, "8001")])
    text = (tmp_path / "raw_memories.md").read_text()
    block = text[: text.index("## Session")]
    assert "## Changed values (newest is current)" in block
    line = next(x for x in block.splitlines() if x.startswith(f"- `{PORT}`"))
    assert line.index("8000") < line.index("8001") < line.index("**CURRENT: 8443**")
    assert text.count("## Session") == 3


def test_raw_memories_has_no_changed_values_block_when_nothing_changed(tmp_path: Path) -> None:
    materialize(tmp_path, [record(1, 1, "8443"), record(2, 2, "8443")])
    assert "Changed values" not in (tmp_path / "raw_memories.md").read_text()


def test_the_global_scope_keeps_only_the_values_of_memories_about_the_user() -> None:
    base = record(1, 1, "unused")
    memories = [
        {
            "type": "user",
            "evidence": "user",
            "name": "Indent",
            "body": "tabs",
            "key": "indent",
            "value": "tabs",
        },
        {"type": "project", "evidence": "user", "name": "Port", "body": "8000", "key": PORT, "value": "8000"},
    ]
    mine = about_the_user(base, memories)
    assert mine is not None
    assert mine.values == (StatedValue("indent", "tabs"),)


def topic(tmp_path: Path, body: str) -> None:
    (tmp_path / "staging.md").write_text(f"---\nname: Staging\ndescription: d\ntype: project\n---\n{body}")


def test_a_topic_keeping_an_older_value_beside_the_newer_one_is_flagged(tmp_path: Path) -> None:
    topic(tmp_path, "- The staging port is 8000.\n- The staging port is 8443.\n")
    (tmp_path / "MEMORY.md").write_text("- [Staging](staging.md) — port 8000\n")  # the index is not a topic
    changes = changes_of([record(1, 1, "8000"), record(2, 2, "8443")])
    [finding] = superseded_findings(tmp_path, changes)
    assert finding.startswith("staging.md line 6 states staging-port as '8000', superseded by '8443'")


def test_a_topic_stating_only_the_older_value_is_flagged(tmp_path: Path) -> None:
    topic(tmp_path, "- Staging listens on 8001.\n")
    changes = changes_of([record(1, 1, "8000"), record(2, 2, "8001"), record(3, 3, "8443")])
    assert len(superseded_findings(tmp_path, changes)) == 1


def test_a_former_value_marked_as_such_and_the_current_one_are_not_flagged(tmp_path: Path) -> None:
    topic(
        tmp_path, "- The staging port is 8443 (was 8000 until 2026-11-02).\n- Port 18000 is the admin one.\n"
    )
    changes = changes_of([record(1, 1, "8000"), record(2, 2, "8443")])
    assert superseded_findings(tmp_path, changes) == []


def test_memds_own_frontmatter_stamps_are_not_read_as_values(tmp_path: Path) -> None:
    (tmp_path / "staging.md").write_text(
        '---\nname: Staging\ndescription: port 8443\ntype: project\nsources: ["5e55-0000-8000-0001"]\n---\n- Port 8443.\n'
    )
    changes = changes_of([record(1, 1, "8000"), record(2, 2, "8443")])
    assert superseded_findings(tmp_path, changes) == []
    (tmp_path / "staging.md").write_text(
        "---\nname: Staging\ndescription: port 8000\ntype: project\n---\n- Port 8443.\n"
    )
    [finding] = superseded_findings(tmp_path, changes)
    assert finding.startswith("staging.md line 3 ")


def test_an_old_value_elsewhere_in_a_topic_about_something_else_is_not_flagged(tmp_path: Path) -> None:
    topic(tmp_path, "- The build takes 8000 ms.\n")  # neither the current value nor the key's words
    changes = changes_of([record(1, 1, "8000"), record(2, 2, "8443")])
    assert superseded_findings(tmp_path, changes) == []

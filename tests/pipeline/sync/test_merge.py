"""The merge of two machines' memory, as data: nothing either side had is lost, no conflict marker."""

from __future__ import annotations

from pipeline.layout import PLACEHOLDER_SUMMARY
from pipeline.memory.inputs import raw_sections
from pipeline.memory.tombstones import TOMBSTONE_TEXT, path_of
from pipeline.sync.merge import merge_trees

S = "projects/app-1"


def summary(session: str) -> bytes:
    return f"session: {session}\nagent: claude_code\n\nWhat {session} did.\n".encode()


def raw(*sessions: str) -> bytes:
    head = "# Raw memories\n\nOne section per session, oldest first. Written by memd; read-only.\n"
    body = "".join(
        f"\n## Session `{s}`\nagent: claude_code; last_activity: 2026-11-0{i + 1}T00:00:00Z; "
        f"rollout_summary_file: rollout_summaries/{s}.md\n\n- {s} note\n"
        for i, s in enumerate(sessions)
    )
    return (head + body).encode()


def topic(name: str, *sources: str) -> bytes:
    src = "".join(f"  - {s}\n" for s in sources)
    return (
        f"---\nname: {name}\ndescription: d\ntype: project\ncreated: 2026-11-01\nupdated: 2026-11-01\n"
        f"sources:\n{src}---\nbody {name}\n"
    ).encode()


def scope(sessions: list[str], topics: dict[str, tuple[str, ...]]) -> dict[str, bytes]:
    files = {f"{S}/rollout_summaries/{s}.md": summary(s) for s in sessions}
    files[f"{S}/raw_memories.md"] = raw(*sessions)
    for name, sources in topics.items():
        files[f"{S}/{name}"] = topic(name, *sources)
    files[f"{S}/MEMORY.md"] = ("# Index\n" + "".join(f"- [{n}]({n})\n" for n in topics)).encode()
    files[f"{S}/memory_summary.md"] = b"# Summary\n"
    return {"README.md": b"readme\n", **files}


def test_a_scope_only_one_side_changed_is_that_sides() -> None:
    base = scope(["a"], {"t-a.md": ("a",)})
    theirs = scope(["a", "b"], {"t-a.md": ("a",), "t-b.md": ("b",)})
    result = merge_trees(base, base, theirs)
    assert result.files == theirs
    assert not result.reconsolidate
    assert merge_trees(base, theirs, base).files == theirs


def test_both_sides_changed_keeps_both_inputs_and_the_remotes_topics() -> None:
    base = scope(["a"], {"t-a.md": ("a",)})
    ours = scope(["a", "o"], {"t-a.md": ("a",), "t-o.md": ("o",)})
    theirs = scope(["a", "t"], {"t-a.md": ("a",), "t-t.md": ("t",)})
    result = merge_trees(base, ours, theirs)
    files = result.files
    assert {p for p in files if "/rollout_summaries/" in p} == {
        f"{S}/rollout_summaries/{s}.md" for s in ("a", "o", "t")
    }
    assert [s.session for s in raw_sections(files[f"{S}/raw_memories.md"].decode())] == ["a", "o", "t"]
    assert f"{S}/t-t.md" in files  # the remote's topics
    assert f"{S}/t-o.md" not in files  # ours is consolidated again on top of them
    assert result.reconsolidate == {S}
    assert not any(b"<<<<<<<" in data for data in files.values())


def test_an_input_one_side_removed_stays_removed() -> None:
    base = scope(["a", "x"], {"t-a.md": ("a",)})
    ours = scope(["a", "o"], {"t-a.md": ("a",)})  # x expired or was forgotten here
    theirs = scope(["a", "x", "t"], {"t-a.md": ("a",)})
    files = merge_trees(base, ours, theirs).files
    assert f"{S}/rollout_summaries/x.md" not in files
    assert "x" not in {s.session for s in raw_sections(files[f"{S}/raw_memories.md"].decode())}


def test_a_tombstone_removes_the_session_its_inputs_and_topics_citing_it_from_either_side() -> None:
    base = scope(["a", "x"], {"t-a.md": ("a",), "t-x.md": ("x", "a")})
    ours = {**base, path_of("x"): TOMBSTONE_TEXT}
    theirs = scope(["a", "x", "t"], {"t-a.md": ("a",), "t-x.md": ("x", "a"), "t-t.md": ("t",)})
    result = merge_trees(base, ours, theirs)
    files = result.files
    assert path_of("x") in files
    assert f"{S}/rollout_summaries/x.md" not in files
    assert f"{S}/t-x.md" not in files
    assert b"t-x.md" not in files[f"{S}/MEMORY.md"]
    assert files[f"{S}/memory_summary.md"] == PLACEHOLDER_SUMMARY
    assert result.withdrawn == {S: ["t-x.md"]}
    assert S in result.reconsolidate
    assert f"{S}/t-t.md" in files  # everything else stays


def test_a_scope_every_input_of_which_is_tombstoned_goes() -> None:
    base = scope(["x"], {"t-x.md": ("x",)})
    result = merge_trees(base, {**base, path_of("x"): TOMBSTONE_TEXT}, base)
    assert not [p for p in result.files if p.startswith(S)]
    assert result.cleared == {S}


def test_unrelated_histories_merge_from_nothing() -> None:
    ours = scope(["o"], {"t-o.md": ("o",)})
    theirs = scope(["t"], {"t-t.md": ("t",)})
    result = merge_trees({}, ours, theirs)
    assert {f"{S}/rollout_summaries/o.md", f"{S}/rollout_summaries/t.md"} <= set(result.files)
    assert result.reconsolidate == {S}


def test_a_scope_another_machine_left_with_the_placeholder_digest_is_rebuilt_here() -> None:
    """The other machine forgot x and could not rebuild (no model): its tree already lacks x, so the
    merge is a fast-forward with nothing to bury; the placeholder still marks the scope for a rebuild."""
    base = scope(["a", "x"], {"t-a.md": ("a",), "t-x.md": ("x",)})
    theirs = {
        **scope(["a"], {"t-a.md": ("a",)}),
        f"{S}/memory_summary.md": PLACEHOLDER_SUMMARY,
        path_of("x"): TOMBSTONE_TEXT,
    }
    result = merge_trees(base, base, theirs)
    assert result.files == theirs
    assert result.reconsolidate == {S}
    settled = {**theirs, f"{S}/memory_summary.md": b"# Summary\n\na.\n"}
    assert merge_trees(theirs, theirs, settled).reconsolidate == set()  # once rebuilt, nothing more

"""What a remote brings is checked like a consolidation before anything is merged."""

from __future__ import annotations

from pipeline.gitrepo.quarantine import IncomingObject
from pipeline.gitrepo.remote import Entry
from pipeline.layout import Caps
from pipeline.memory import tombstones
from pipeline.redaction import Redactor
from pipeline.sync import incoming
from pipeline.sync.incoming import findings, object_findings, path_findings
from tests.pipeline.consolidate.support import SECRET_LINE
from tests.pipeline.sync.test_merge import scope, topic

CAPS = Caps(summary_max_tokens=1000, topic_max_bytes=20_000, max_topic_files=100)
FINDER = Redactor(b"incoming-test-key-0123456789")


def entries(files: dict[str, bytes], mode: str = "100644") -> dict[str, Entry]:
    return {p: Entry(mode, "0" * 40) for p in files}


def test_paths_outside_memory_and_non_regular_entries_are_refused() -> None:
    found = path_findings(
        {
            ".gitattributes": Entry("100644", "0" * 40),
            ".gitmodules": Entry("100644", "0" * 40),
            "projects/app-1/link.md": Entry("120000", "0" * 40),
            "projects/app-1/sub": Entry("160000", "0" * 40),
            "projects/app-1/.hidden.md": Entry("100644", "0" * 40),
            "projects/../x.md": Entry("100644", "0" * 40),
            "tombstones/not-a-hash": Entry("100644", "0" * 40),
            "README.md": Entry("100644", "0" * 40),
        }
    )
    joined = "\n".join(found)
    for path in (".gitattributes", ".gitmodules", "link.md", "sub", ".hidden.md", "tombstones/not-a-hash"):
        assert path in joined
    assert "README.md" not in joined
    assert len(found) == 7


def test_a_sound_remote_passes() -> None:
    theirs = scope(["a"], {"t-a.md": ("a",)})
    assert findings(entries(theirs), theirs, {}, list(theirs.items()), caps=CAPS, finder=FINDER) == []


def test_a_secret_in_any_incoming_version_is_refused_even_if_a_later_commit_removed_it() -> None:
    theirs = scope(["a"], {"t-a.md": ("a",)})
    earlier = ("projects/app-1/t-a.md", topic("t-a.md", "a") + f"\n{SECRET_LINE}\n".encode())
    found = findings(entries(theirs), theirs, {}, [earlier], caps=CAPS, finder=FINDER)
    assert found
    assert "secret gate" in found[0]
    assert "hunter2" not in "".join(found)  # the finding names the rule, never the value


def test_a_scope_that_fails_validation_is_refused() -> None:
    theirs = scope(["a"], {"t-a.md": ("a",)})
    theirs["projects/app-1/t-a.md"] = b"no frontmatter here\n"
    del theirs["projects/app-1/memory_summary.md"]
    found = findings(entries(theirs), theirs, {}, [], caps=CAPS, finder=FINDER)
    assert any("memory_summary.md is missing" in f for f in found)
    assert any("t-a.md" in f for f in found)


def test_a_huge_file_is_refused() -> None:
    theirs = scope(["a"], {"t-a.md": ("a",)})
    theirs["projects/app-1/rollout_summaries/a.md"] = b"x" * (3 * 1024 * 1024)
    found = findings(entries(theirs), theirs, {}, [], caps=CAPS, finder=FINDER)
    assert any("over the cap" in f and "rollout_summaries/a.md" in f for f in found)


def _blob(path: str, size: int, n: int = 0) -> IncomingObject:
    return IncomingObject(f"{n:040x}", "blob", size, path)


def test_every_incoming_object_is_held_to_the_cap_of_its_path_by_its_recorded_size() -> None:
    sound = [
        _blob("README.md", 1000, 1),
        _blob("projects/app-1/raw_memories.md", incoming.MAX_FILE_BYTES, 2),
        IncomingObject("3" * 40, "tree", 5000, "projects"),
        IncomingObject("5" * 40, "tree", 60 * 100_000, "tombstones"),  # a hundred thousand forgets
        IncomingObject("4" * 40, "commit", 300, ""),
    ]
    assert object_findings(sound) == []
    found = object_findings(
        [
            _blob("README.md", incoming.MAX_ROOT_FILE_BYTES + 1, 1),
            _blob("projects/app-1/raw_memories.md", incoming.MAX_FILE_BYTES + 1, 2),
            _blob(tombstones.path_of("s-1"), 5000, 3),
            IncomingObject("4" * 40, "commit", incoming.MAX_META_BYTES + 1, ""),
            IncomingObject("6" * 40, "tree", incoming.MAX_TREE_BYTES + 1, "tombstones"),
        ]
    )
    assert len(found) == 5
    assert f"{incoming.MAX_TREE_BYTES + 1} bytes" in found[4]
    assert "README.md" in found[0]
    assert f"{incoming.MAX_FILE_BYTES + 1} bytes" in found[1]
    assert "a commit" in found[3]


def test_what_one_sync_brings_is_capped_in_bytes_and_in_objects() -> None:
    many = [
        _blob(f"projects/app-1/rollout_summaries/{n}.md", 10, n)
        for n in range(incoming.MAX_INCOMING_OBJECTS + 1)
    ]
    assert any("objects, over the cap" in f for f in object_findings(many))
    count = incoming.MAX_INCOMING_BYTES // incoming.MAX_FILE_BYTES + 1
    big = [
        _blob(f"projects/app-1/rollout_summaries/{n}.md", incoming.MAX_FILE_BYTES, n) for n in range(count)
    ]
    found = object_findings(big)
    assert len(found) == 1
    assert "bytes, over the cap" in found[0]


def test_what_a_remote_sent_at_all_is_capped_before_it_is_listed() -> None:
    assert incoming.received_findings(10, 1000) == []
    found = incoming.received_findings(incoming.MAX_INCOMING_OBJECTS + 1, incoming.MAX_INCOMING_BYTES + 1)
    assert len(found) == 2

"""The working tree is read as hostile files: real folders and regular files only, sizes capped."""

from __future__ import annotations

import os
from pathlib import Path

from pipeline.search.corpus import TOPIC_MAX_BYTES, Corpus

TOPIC = "---\nname: {name}\ndescription: d\nupdated: 2026-01-02\n---\nbody of {name}\n"


def test_only_regular_topic_files_of_real_scope_folders_are_read(tmp_path: Path) -> None:
    memory = tmp_path / "memory"
    scope = memory / "projects" / "app-12345678"
    scope.mkdir(parents=True)
    (memory / "global").mkdir()
    (scope / "deploy.md").write_text(TOPIC.format(name="deploy"))
    for reserved in ("MEMORY.md", "memory_summary.md", "raw_memories.md", ".hidden.md"):
        (scope / reserved).write_text(TOPIC.format(name=reserved))
    outside = tmp_path / "secret.md"
    outside.write_text(TOPIC.format(name="outside"))
    (scope / "link.md").symlink_to(outside)
    os.mkfifo(scope / "fifo.md")
    (scope / "huge.md").write_text(TOPIC.format(name="huge") + "x" * TOPIC_MAX_BYTES)
    (memory / "projects" / "linked-12345678").symlink_to(scope)
    (memory / "projects" / "bad key!").mkdir()
    (memory / "projects" / "bad key!" / "a.md").write_text(TOPIC.format(name="bad"))
    corpus = Corpus(memory)
    topics = corpus.topics()
    assert [t.id for t in topics] == ["projects/app-12345678/deploy.md"]
    assert topics[0].name == "deploy"
    assert corpus.read("projects/app-12345678", "link.md") is None
    assert corpus.read("projects/app-12345678", "fifo.md") is None
    assert corpus.read("projects/linked-12345678", "deploy.md") is None
    assert corpus.read("projects/app-12345678", "../../secret.md") is None


def test_a_changed_file_is_read_again_and_a_removed_one_dropped(tmp_path: Path) -> None:
    scope = tmp_path / "global"
    scope.mkdir()
    (scope / "a.md").write_text(TOPIC.format(name="a"))
    corpus = Corpus(tmp_path)
    assert [t.name for t in corpus.topics()] == ["a"]
    first = corpus.generation
    assert corpus.topics()
    assert corpus.generation == first
    (scope / "a.md").write_text(TOPIC.format(name="a2") + "more\n")
    assert [t.name for t in corpus.topics()] == ["a2"]
    (scope / "a.md").unlink()
    assert corpus.topics() == []
    assert corpus.generation > first + 1

"""A topic's cites: parsed strictly, read from the project as hostile files, kept by the frontmatter."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipeline.memory import cites, frontmatter

TOPIC = '---\nname: Deploy\ndescription: How to deploy\ntype: project\ncites: ["src/app.py:2-3", "Makefile:1"]\n---\nBody.\n'


def test_cites_are_a_list_key_kept_when_memd_renders_the_file() -> None:
    meta = frontmatter.parse(TOPIC).meta
    assert meta.cites == ("src/app.py:2-3", "Makefile:1")
    assert frontmatter.problems(meta, require_provenance=False) == []
    again = frontmatter.parse(frontmatter.render(meta, "Body.\n")).meta
    assert again.cites == meta.cites
    block = TOPIC.replace(
        'cites: ["src/app.py:2-3", "Makefile:1"]', "cites:\n  - src/app.py:2-3\n  - Makefile:1"
    )
    assert frontmatter.parse(block).meta.cites == meta.cites


@pytest.mark.parametrize(
    "bad",
    [
        "/etc/passwd:1",
        "../other/x.py:1",
        "src/app.py",
        "src/app.py:5-3",
        "src/app.py:0",
        "C:/x.py:1",
        "a.py:1-900",
    ],
)
def test_a_bad_cite_is_a_finding(bad: str) -> None:
    meta = frontmatter.parse(TOPIC.replace("Makefile:1", bad)).meta
    found = frontmatter.problems(meta, require_provenance=False)
    assert len(found) == 1
    assert bad[:20] in found[0]


def test_the_fingerprint_changes_with_the_cited_lines_only(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    app = tmp_path / "src" / "app.py"
    app.write_text("import os\nPORT = 8080\nHOST = 'x'\nrest\n")
    cite = cites.parse("src/app.py:2-3")
    before = cites.fingerprint(tmp_path, cite)
    app.write_text("import sys\nPORT = 8080\nHOST = 'x'\nmore rest\n")
    assert cites.fingerprint(tmp_path, cite) == before
    app.write_text("import sys\nPORT = 9090\nHOST = 'x'\n")
    assert cites.fingerprint(tmp_path, cite) != before
    app.write_text("import sys\n")
    with pytest.raises(cites.Gone, match="fewer than the cited"):
        cites.fingerprint(tmp_path, cite)
    app.unlink()
    with pytest.raises(cites.Gone, match="is gone"):
        cites.fingerprint(tmp_path, cite)


def test_a_cite_never_follows_a_link_out_of_the_project(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("a\nb\n")
    project = tmp_path / "project"
    project.mkdir()
    (project / "link").symlink_to(outside)
    (project / "file.txt").symlink_to(outside / "secret.txt")
    for text in ("link/secret.txt:1", "file.txt:1"):
        with pytest.raises(cites.Gone, match="symbolic link"):
            cites.fingerprint(project, cites.parse(text))


def test_a_fifo_or_a_huge_file_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(cites.Gone, match="not a regular file"):
        cites.fingerprint(tmp_path, cites.parse("pipe:1"))
    with (tmp_path / "big").open("wb") as f:
        f.truncate(cites.FILE_MAX_BYTES + 1)
    with pytest.raises(cites.Gone, match="larger than memd reads"):
        cites.fingerprint(tmp_path, cites.parse("big:1"))

"""What the user types for a scope or a memory: keys, short names, folders, ids."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pipeline.projects import scope_for
from pipeline.projects.scopes import (
    ScopeNotFound,
    TopicId,
    folders_by_scope,
    scope_argument,
    short_name,
    topic_id,
)

KNOWN = [
    "global",
    "projects/app-9a85e48f",
    "projects/api-1a2b3c4d",
    "projects/web-0000aaaa",
    "projects/web-1111bbbb",
]


def _repo(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True, capture_output=True)
    return path


def test_a_scope_written_out_is_taken_as_it_is() -> None:
    assert scope_argument("global", known=KNOWN) == "global"
    assert scope_argument("projects/app-9a85e48f/", known=KNOWN) == "projects/app-9a85e48f"


def test_a_key_and_its_short_name_find_the_scope() -> None:
    assert scope_argument("app-9a85e48f", known=KNOWN) == "projects/app-9a85e48f"
    assert scope_argument("api", known=KNOWN) == "projects/api-1a2b3c4d"
    assert short_name("projects/app-9a85e48f") == "app"
    assert short_name("global") == "global"


def test_a_short_name_two_scopes_share_is_refused_naming_both() -> None:
    with pytest.raises(ScopeNotFound) as refused:
        scope_argument("web", known=KNOWN)
    assert "projects/web-0000aaaa" in str(refused.value)
    assert "projects/web-1111bbbb" in str(refused.value)


def test_a_project_folder_or_any_folder_inside_it_is_its_scope(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "app")
    deep = repo / "src" / "deep"
    deep.mkdir(parents=True)
    expected = scope_for(str(repo.resolve()))
    assert scope_argument(str(repo)) == expected
    assert scope_argument(str(deep)) == expected
    assert scope_argument("./src/deep", cwd=repo) == expected
    assert scope_argument("src", cwd=repo) == expected


def test_what_is_neither_scope_key_nor_folder_is_refused() -> None:
    with pytest.raises(ScopeNotFound):
        scope_argument("projects/../etc")
    with pytest.raises(ScopeNotFound):
        scope_argument("   ")


def test_a_memory_id_is_its_scope_and_file() -> None:
    assert topic_id("global/prefs.md") == TopicId("global", "prefs.md")
    found = topic_id("projects/app-9a85e48f/deploy.md")
    assert found == TopicId("projects/app-9a85e48f", "deploy.md")
    assert str(found) == "projects/app-9a85e48f/deploy.md"
    assert topic_id("app/deploy.md", known=KNOWN) == found


@pytest.mark.parametrize(
    "value",
    [
        "prefs.md",
        "global/MEMORY.md",
        "global/memory_summary.md",
        "global/rollout_summaries/x.md",
        "global/../x.md",
        "projects/app-9a85e48f",
    ],
)
def test_what_is_not_a_topic_is_not_an_id(value: str) -> None:
    with pytest.raises(ScopeNotFound):
        topic_id(value, known=KNOWN)


def test_each_scope_lists_its_project_folders(tmp_path: Path) -> None:
    one, two = str(tmp_path / "a"), str(tmp_path / "b")
    found = folders_by_scope([one, two, one, ""])
    assert found == {scope_for(one): [one], scope_for(two): [two]}


def test_a_file_path_is_in_its_folder_s_project_not_a_scope_of_its_own(tmp_path: Path) -> None:
    """Issue 36: `memd memories show some/file.py` made up a scope key from the file's name."""
    project = tmp_path / "app"
    project.mkdir()
    (project / "main.py").write_text("print()\n")
    assert scope_argument(str(project / "main.py")) == scope_argument(str(project))
    assert scope_argument("main.py", cwd=project) == scope_argument(str(project))
    assert "main.py" not in scope_argument(str(project / "main.py"))

"""The sentinel rules: only memd's block changes; broken sentinels leave the file alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.publish import sentinel
from pipeline.publish.atomic import atomic_write_bytes, atomic_write_text, decode
from pipeline.publish.plan import read_bytes
from pipeline.publish.sentinel import BEGIN, END, outside, replace_block


def test_absent_file_gets_just_the_block() -> None:
    edit = replace_block(None, "memd says hi\n")
    assert edit.text == f"{BEGIN}\nmemd says hi\n{END}\n"


def test_block_is_appended_after_user_text_which_is_kept_as_is() -> None:
    user = "# My notes\n- keep me\n"
    edit = replace_block(user, "body\n")
    assert edit.text is not None
    assert edit.text.startswith(user)
    assert edit.text == user + f"\n{BEGIN}\nbody\n{END}\n"
    # Text without a final newline is kept byte for byte too.
    edit = replace_block("no newline", "body")
    assert edit.text == f"no newline\n\n{BEGIN}\nbody\n{END}\n"


def test_only_text_between_sentinels_is_replaced_user_text_before_between_and_after() -> None:
    before = "Claude's line 1\r\nline with trailing spaces   \n\n"
    after = "\n  after, indented\ttab\nlast line without newline"
    text = f"{before}{BEGIN}\nold memd text\nmore old\n{END}{after}"
    edit = replace_block(text, "new body\n")
    assert edit.ok
    assert edit.text is not None
    assert edit.old_body == "old memd text\nmore old\n"
    assert edit.text == f"{before}{BEGIN}\nnew body\n{END}{after}"
    # Everything outside the block is identical, byte for byte.
    assert outside(edit.text) == outside(text) == before + after
    # Replacing again with the same body is a no-op.
    assert replace_block(edit.text, "new body\n").text == edit.text


def test_text_a_user_typed_inside_the_block_is_memds_to_replace() -> None:
    text = f"mine\n{BEGIN}\nuser wrote here by mistake\n{END}\nmine too\n"
    edit = replace_block(text, "memd\n")
    assert edit.text == f"mine\n{BEGIN}\nmemd\n{END}\nmine too\n"


def test_sentinels_on_one_line_still_only_change_the_inside() -> None:
    text = f"a {BEGIN}{END} b\n"
    edit = replace_block(text, "x\n")
    assert edit.text == f"a {BEGIN}\nx\n{END} b\n"


@pytest.mark.parametrize(
    "text",
    [
        f"mine\n{BEGIN}\nhalf a block\n",
        f"mine\n{END}\n",
        f"{END}\nx\n{BEGIN}\n",
        f"{BEGIN}\na\n{END}\n{BEGIN}\nb\n{END}\n",
        f"{BEGIN}\n{BEGIN}\n{END}\n",
    ],
    ids=["only-begin", "only-end", "misordered", "two-blocks", "two-begins"],
)
def test_broken_sentinels_leave_the_file_alone_with_a_reason(text: str) -> None:
    edit = replace_block(text, "new\n")
    assert not edit.ok
    assert edit.text is None
    assert edit.problem
    assert "left alone" in edit.problem
    # The budget counts a broken file as all outside.
    assert outside(text) == text
    assert sentinel.block_body(text) is None


def test_count_lines() -> None:
    assert sentinel.count_lines("") == 0
    assert sentinel.count_lines("a") == 1
    assert sentinel.count_lines("a\n") == 1
    assert sentinel.count_lines("a\nb") == 2


def test_atomic_write_keeps_mode_leaves_no_temp_and_follows_a_user_level_symlink(tmp_path: Path) -> None:
    target = tmp_path / "dotfiles" / "CLAUDE.md"
    target.parent.mkdir()
    target.write_text("old\n")
    target.chmod(0o600)
    link = tmp_path / "CLAUDE.md"
    link.symlink_to(target)
    atomic_write_text(link, "new\n", follow_link=True)
    assert link.is_symlink(), "the user's symlink survives"
    assert target.read_text() == "new\n"
    assert target.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in target.parent.iterdir()) == ["CLAUDE.md"]
    # Invalid UTF-8 survives a round trip untouched.
    raw = b"caf\xe9 \xff\n"
    atomic_write_bytes(tmp_path / "bin.md", raw)
    data = read_bytes(tmp_path / "bin.md")
    assert data is not None
    text = decode(data)
    edit = replace_block(text, "x\n")
    assert edit.text is not None
    assert edit.text.encode("utf-8", "surrogateescape").startswith(raw)

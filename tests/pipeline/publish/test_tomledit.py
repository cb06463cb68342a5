"""One table of a TOML file edited as lines: every other line stays, the result is parsed and
checked, and taking the table out again gives the file back."""

from __future__ import annotations

import random
import tomllib

import pytest

from pipeline.publish.tomledit import TomlEditError, get_table, remove_table, render_table, set_table

PATH = ("mcp_servers", "memd")
VALUES = {"command": "/opt/memd/bin/memd", "args": ["mcp"]}

ROUND_TRIPS = {
    "absent": "",
    "top-level keys": 'model = "o3"\napproval_policy = "never"\n',
    "tables and comments": (
        '# my codex\nmodel = "o3"\n\n[mcp_servers.web]\ncommand = "w" # inline\n# about profiles\n'
        '[profiles.fast]\nmodel = "o4-mini"\n'
    ),
    "an explicit empty parent table": "# top\n[mcp_servers]\n",
    "arrays of tables and multi-line strings": (
        'x = """\n[not.a.header]\n"""\n[[hooks]]\nrun = "a"\n\n[[hooks]]\nrun = "b"\n'
    ),
}


@pytest.mark.parametrize("text", ROUND_TRIPS.values(), ids=ROUND_TRIPS.keys())
def test_the_table_goes_in_and_out_leaving_every_other_line(text: str) -> None:
    added = set_table(text, PATH, VALUES)
    assert added.startswith(text)  # appended: nothing before it moved
    assert tomllib.loads(added)["mcp_servers"]["memd"] == VALUES
    assert get_table(added, PATH) == VALUES
    assert set_table(added, PATH, VALUES) == added
    assert remove_table(added, PATH) == text


def test_a_file_without_a_final_newline_gets_one() -> None:
    added = set_table("a = 1", PATH, VALUES)
    assert added == "a = 1\n\n" + render_table(PATH, VALUES)
    assert remove_table(added, PATH) == "a = 1\n"


def test_an_existing_table_and_its_sub_tables_are_replaced_in_place() -> None:
    text = (
        'model = "o3"\n\n[mcp_servers.memd]\ncommand = "old"\n\n[mcp_servers.memd.env]\nX = "1"\n\n'
        '# the next one\n[mcp_servers."web"]\ncommand = "w"\n'
    )
    updated = set_table(text, PATH, VALUES)
    assert updated == (
        'model = "o3"\n\n[mcp_servers.memd]\ncommand = "/opt/memd/bin/memd"\nargs = ["mcp"]\n\n'
        '# the next one\n[mcp_servers."web"]\ncommand = "w"\n'
    )
    assert (
        remove_table(updated, PATH) == 'model = "o3"\n\n# the next one\n[mcp_servers."web"]\ncommand = "w"\n'
    )


def test_a_quoted_or_spaced_header_is_the_same_table() -> None:
    text = "[ mcp_servers . 'memd' ]\ncommand = \"old\"\n"
    assert set_table(text, PATH, VALUES) == render_table(PATH, VALUES)
    assert remove_table(text, PATH) == ""


@pytest.mark.parametrize(
    "text",
    [
        'mcp_servers = { memd = { command = "x" } }\n',
        '[mcp_servers]\nmemd.command = "x"\n',
        '[mcp_servers]\nmemd = { command = "x" }\n',
    ],
)
def test_a_table_written_another_way_is_left_to_the_user(text: str) -> None:
    with pytest.raises(TomlEditError, match="without a table header"):
        set_table(text, PATH, VALUES)
    with pytest.raises(TomlEditError, match="without a table header"):
        remove_table(text, PATH)


def test_an_inline_parent_table_refuses_the_new_table() -> None:
    with pytest.raises(TomlEditError, match="would not be valid TOML"):
        set_table('mcp_servers = { web = { command = "w" } }\n', PATH, VALUES)


def test_a_file_that_is_not_toml_is_refused() -> None:
    with pytest.raises(TomlEditError, match="not valid TOML"):
        set_table("model = \n", PATH, VALUES)


def test_values_are_quoted_as_toml() -> None:
    text = render_table(PATH, {"command": 'C:\\odd "path"\tx', "args": ["é", "a'b"], "n": 3, "on": True})
    assert tomllib.loads(text)["mcp_servers"]["memd"] == {
        "command": 'C:\\odd "path"\tx',
        "args": ["é", "a'b"],
        "n": 3,
        "on": True,
    }


def test_crlf_lines_stay_crlf() -> None:
    text = 'model = "o3"\r\n\r\n[tui]\r\nx = 1\r\n'
    added = set_table(text, PATH, VALUES)
    assert added == text + "\r\n" + render_table(PATH, VALUES, "\r\n")
    assert "\n" not in added.replace("\r\n", "")
    assert remove_table(added, PATH) == text


def _random_toml(rng: random.Random) -> str:
    """A config.toml as people write them: keys, tables, comments on their own lines and after
    values, blank lines, and sometimes the user's own (empty) ``[mcp_servers]`` or a sibling server."""
    nl = "\r\n" if rng.random() < 0.2 else "\n"
    lines: list[str] = []
    if rng.random() < 0.5:
        lines.append("# my codex")
    for i in range(rng.randint(0, 3)):
        lines.append(f'key{i} = "v{i}"' + (" # why" if rng.random() < 0.3 else ""))
    tables = [f"profiles.p{i}" for i in range(rng.randint(0, 2))]
    servers = rng.random()
    if servers < 0.35:
        tables.append("mcp_servers")  # the user's own header, empty
    elif servers < 0.6:
        tables.append("mcp_servers.web")
    rng.shuffle(tables)
    for table in tables:
        if lines and rng.random() < 0.7:
            lines.append("")
        if rng.random() < 0.3:
            lines.append(f"# about {table}")
        lines.append(f"[{table}]" + (" # header" if rng.random() < 0.2 else ""))
        if table != "mcp_servers":
            lines.append('command = "c"')
    if rng.random() < 0.3:
        lines += ["", "# the end"]
    text = nl.join(lines)
    # A last line without its newline gets one (test_a_file_without_a_final_newline_gets_one): the
    # text alone cannot tell it from one that had it; memd's install record gives it back.
    return text + nl if text else ""


@pytest.mark.parametrize("seed", range(60))
def test_random_documents_come_back_byte_for_byte(seed: int) -> None:
    rng = random.Random(seed)
    text = _random_toml(rng)
    added = set_table(text, PATH, VALUES)
    assert tomllib.loads(added)["mcp_servers"]["memd"] == VALUES
    assert added.count("#") == text.count("#")
    assert remove_table(added, PATH) == text, (text, added)

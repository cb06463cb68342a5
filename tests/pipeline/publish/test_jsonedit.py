"""One entry of a JSON / JSONC file edited as text: every other byte stays, and taking the entry
out again gives the file back exactly."""

from __future__ import annotations

import json
import random
import re

import pytest

from pipeline.publish.jsonedit import JsonEditError, absent_objects, get_entry, loads, remove_entry, set_entry

ENTRY = {"type": "stdio", "command": "/opt/memd/bin/memd", "args": ["mcp"], "env": {}}
PATH = ("mcpServers", "memd")

ROUND_TRIPS = {
    "empty object": "{}",
    "pretty, two spaces, no container": '{\n  "theme": "dark",\n  "numStartups": 12\n}\n',
    "four spaces, a sibling server": (
        '{\n    "a": 1,\n    "mcpServers": {\n        "web": {"command": "w"}\n    },\n    "z": [1, 2]\n}\n'
    ),
    "tabs": '{\n\t"a": 1\n}\n',
    "one line": '{"a": 1, "mcpServers": {"web": {"command": "w"}}}',
    "no final newline": '{\n  "a": {"b": [true, null, 1.5e3]}\n}',
    "unicode and escapes": '{\n  "name": "Zoë \\"q\\" \\u00e9",\n  "path": "C:\\\\x"\n}\n',
}

JSONC_ROUND_TRIPS = {
    "tabs, a comment after the last value": '{\n\t"a": 1 // keep me\n}\n',
    "a block comment after the last member": '{\n    "general": {"disableAutoUpdate": true} /* c */\n}\n',
    "block comments after members, an empty container": (
        '{\n  "a": 1, /* one */\n  "mcp": {} /* none yet */ // and more\n}\n'
    ),
    "comments and trailing commas": (
        '{\n  // my settings\n  "a": [1, 2,],\n  /* block */\n  "mcp": {\n    "web": {"type": "local"}, // w\n  },\n}\n'
    ),
    "only a comment in the container": '{\n  "mcp": {\n    /* servers go here */\n  }\n}\n',
    "a trailing comma after the last member": '{\n  "mcp": {\n    "o": 1, // trailing\n  },\n  "z": null\n}',
}


@pytest.mark.parametrize("text", ROUND_TRIPS.values(), ids=ROUND_TRIPS.keys())
def test_the_entry_goes_in_and_out_leaving_every_other_byte(text: str) -> None:
    added = set_entry(text, PATH, ENTRY)
    assert json.loads(added)["mcpServers"]["memd"] == ENTRY
    original = json.loads(text)
    changed = json.loads(added)
    del changed["mcpServers"]["memd"]
    if not changed["mcpServers"] and "mcpServers" not in original:
        del changed["mcpServers"]
    assert changed == original
    assert list(json.loads(added))[: len(original)] == list(original)  # key order kept
    assert set_entry(added, PATH, ENTRY) == added  # a second install changes nothing
    assert remove_entry(added, PATH, drop_objects=absent_objects(text, PATH)) == text


@pytest.mark.parametrize("text", JSONC_ROUND_TRIPS.values(), ids=JSONC_ROUND_TRIPS.keys())
def test_jsonc_comments_and_trailing_commas_survive(text: str) -> None:
    path = ("mcp", "memd")
    added = set_entry(text, path, ENTRY, jsonc=True)
    for comment in (
        "// keep me",
        "// my settings",
        "/* block */",
        "// w",
        "/* servers go here */",
        "// trailing",
    ):
        assert (comment in added) == (comment in text)
    assert get_entry(added, path, jsonc=True) == ENTRY
    assert remove_entry(added, path, jsonc=True, drop_objects=absent_objects(text, path, jsonc=True)) == text


def test_the_new_entry_takes_the_indentation_of_its_siblings() -> None:
    text = '{\n    "mcpServers": {\n        "web": {"command": "w"}\n    }\n}\n'
    added = set_entry(text, PATH, {"command": "m"})
    assert '\n        "memd": {\n            "command": "m"\n        }\n' in added
    tabs = set_entry('{\n\t"a": 1\n}\n', PATH, {"command": "m"})
    assert tabs == '{\n\t"a": 1,\n\t"mcpServers": {\n\t\t"memd": {\n\t\t\t"command": "m"\n\t\t}\n\t}\n}\n'


def test_an_absent_or_blank_file_becomes_a_pretty_object() -> None:
    for text in ("", "  \n"):
        added = set_entry(text, PATH, {"command": "m"})
        assert added == '{\n  "mcpServers": {\n    "memd": {\n      "command": "m"\n    }\n  }\n}\n'
        assert absent_objects(text, PATH) == 1
        assert remove_entry(added, PATH, drop_objects=1) == "{}\n"


def test_an_existing_entry_is_replaced_in_place() -> None:
    text = '{\n  "mcpServers": {\n    "memd": {"command": "old"},\n    "web": {"command": "w"}\n  }\n}\n'
    updated = set_entry(text, PATH, {"command": "new"})
    assert updated == (
        '{\n  "mcpServers": {\n    "memd": {\n      "command": "new"\n    },\n    "web": {"command": "w"}\n  }\n}\n'
    )
    removed = remove_entry(updated, PATH)
    assert removed == '{\n  "mcpServers": {\n    "web": {"command": "w"}\n  }\n}\n'


def test_removal_keeps_a_container_that_holds_anything_else() -> None:
    text = '{\n  "mcpServers": {\n    "memd": {"command": "m"},\n    "web": {"command": "w"}\n  },\n  "a": 1\n}\n'
    assert (
        remove_entry(text, PATH) == '{\n  "mcpServers": {\n    "web": {"command": "w"}\n  },\n  "a": 1\n}\n'
    )
    assert remove_entry('{"a": 1}', PATH) == '{"a": 1}'  # nothing to remove: the text as it was


def test_a_container_goes_only_when_the_install_created_it() -> None:
    """An empty ``mcpServers`` the user had stays (``drop_objects`` 0); one the install created goes."""
    had = '{\n  "a": 1,\n  "mcpServers": {}\n}\n'
    assert absent_objects(had, PATH) == 0
    added = set_entry(had, PATH, ENTRY)
    assert remove_entry(added, PATH) == had
    created = set_entry('{\n  "a": 1\n}\n', PATH, ENTRY)
    assert created == set_entry(had.replace(',\n  "mcpServers": {}', ""), PATH, ENTRY)
    assert remove_entry(created, PATH, drop_objects=1) == '{\n  "a": 1\n}\n'
    assert remove_entry(created, PATH) == '{\n  "a": 1,\n  "mcpServers": {}\n}\n'


def test_a_duplicated_key_is_read_as_readers_do_and_removed_whole() -> None:
    text = '{\n  "mcpServers": {\n    "memd": {"command": "a"},\n    "memd": {"command": "b"}\n  }\n}\n'
    assert get_entry(text, PATH) == {"command": "b"}
    assert loads(remove_entry(text, PATH, drop_objects=1)) == {}


@pytest.mark.parametrize(
    "text",
    ["[1, 2]", "{", '{"a": 1,}', '{"a": 1} x', "{'a': 1}", '{"mcpServers": 3}', '{"a": 1 // c\n}', "nul"],
)
def test_what_it_cannot_read_is_refused(text: str) -> None:
    with pytest.raises(JsonEditError):
        set_entry(text, PATH, ENTRY)


def test_strict_json_refuses_comments_that_jsonc_reads() -> None:
    text = '{\n  // c\n  "a": 1,\n}\n'
    with pytest.raises(JsonEditError):
        loads(text)
    assert loads(text, jsonc=True) == {"a": 1}


def test_crlf_lines_stay_crlf() -> None:
    for text in ('{\r\n  "a": 1\r\n}\r\n', '{\r\n  "a": 1 // c\r\n}\r\n', '{\r\n  "mcpServers": {}\r\n}\r\n'):
        added = set_entry(text, PATH, ENTRY, jsonc=True)
        assert "\n" not in added.replace("\r\n", ""), repr(added)
        assert get_entry(added, PATH, jsonc=True) == ENTRY
        created = absent_objects(text, PATH, jsonc=True)
        assert remove_entry(added, PATH, jsonc=True, drop_objects=created) == text


def _random_value(rng: random.Random, depth: int) -> object:
    kind = rng.choice(["str", "int", "bool", "null", "list", "dict"] if depth < 3 else ["str", "int", "null"])
    if kind == "str":
        return rng.choice(["", "x", 'q"uote', "back\\slash", "é ü", "a/b", "{not: json}", "// not a comment"])
    if kind == "int":
        return rng.randint(-5, 10**6)
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "null":
        return None
    if kind == "list":
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {f"k{i}": _random_value(rng, depth + 1) for i in range(rng.randint(0, 4))}


def _with_block_comments(text: str, rng: random.Random) -> str:
    """``text`` (``json.dumps`` output: no ", " or newline inside its strings) with block comments
    after some members' values, and after the last member of the document (when it has one)."""
    out = []
    for piece in re.split(r"(,\n|, )", text):
        out.append(piece)
        if piece in (",\n", ", ") and rng.random() < 0.4:
            out[-1] = piece.rstrip("\n") + f"/* c{len(out)} */" + ("\n" if piece.endswith("\n") else " ")
    text = "".join(out)
    end = text.rstrip("\n").rfind("}")
    if rng.random() < 0.6 and text.strip() != "{}":
        close = text.rfind("\n", 0, end) if "\n" in text[:end] else end
        text = text[:close] + " /* after the last member */" + text[close:]
    return text


@pytest.mark.parametrize("seed", range(60))
def test_random_documents_come_back_byte_for_byte(seed: int) -> None:
    rng = random.Random(seed)
    data = {f"key{i}": _random_value(rng, 1) for i in range(rng.randint(0, 6))}
    servers = rng.random()
    if servers < 0.4:
        data["mcpServers"] = {f"s{i}": {"command": "c"} for i in range(rng.randint(1, 3))}
    elif servers < 0.7:
        data["mcpServers"] = {}  # the user's own empty container, before memd was installed
    indent = rng.choice([None, 2, 4, "\t"])
    text = json.dumps(data, indent=indent, ensure_ascii=rng.random() < 0.5) + rng.choice(["", "\n"])
    jsonc = rng.random() < 0.5
    if jsonc:
        text = _with_block_comments(text, rng)
    created = absent_objects(text, PATH, jsonc=jsonc)
    assert created == (0 if "mcpServers" in data else 1)
    added = set_entry(text, PATH, ENTRY, jsonc=jsonc)
    assert loads(added, jsonc=jsonc) == {**data, "mcpServers": {**data.get("mcpServers", {}), "memd": ENTRY}}
    assert added.count("/*") == text.count("/*")
    assert remove_entry(added, PATH, jsonc=jsonc, drop_objects=created) == text, (text, added)

"""Editing one entry of someone else's JSON (or JSONC) file as text: every other byte stays.

An agent's settings file is the user's: re-dumping it would reorder keys, change indentation, drop
JSONC comments and trailing commas. ``set_entry`` and ``remove_entry`` instead parse the text into
spans (where each member's key and value start and end, and where its comma is) and splice only the
one member at ``path`` (``("mcpServers", "memd")``): a new member takes the indentation of its
siblings (a comment after the value it follows stays on that value's line), a value it replaces is
rendered at its own, and a container it leaves empty goes with it only when the caller says the
install made it (``absent_objects`` before the install: an empty ``mcpServers`` the user wrote and
one the install made read the same). The result is parsed again and checked to be the data asked for; anything the parser
cannot read is ``JsonEditError`` and the text is left alone. Comments (``//``, ``/* */``) and
trailing commas are read only where ``jsonc`` says the format allows them. Standard library only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

_WS = " \t\r\n"
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


class JsonEditError(ValueError):
    """The text is not what the edit can work on (not JSON, not an object where one is needed)."""


@dataclass
class Member:
    key: str
    key_start: int
    value_start: int
    value_end: int
    value: Node
    comma: int | None = None
    """The position of the comma after the value, when there is one."""


@dataclass
class Node:
    start: int
    end: int
    data: Any
    members: list[Member] = field(default_factory=list)
    """An object's members in order (empty for any other value)."""
    is_object: bool = False


class _Parser:
    def __init__(self, text: str, *, jsonc: bool) -> None:
        self.text = text
        self.jsonc = jsonc
        self.i = 0

    def fail(self, what: str) -> JsonEditError:
        line = self.text.count("\n", 0, self.i) + 1
        column = self.i - (self.text.rfind("\n", 0, self.i) + 1) + 1
        return JsonEditError(f"{what} at line {line} column {column}")

    def skip(self) -> None:
        """Whitespace, and comments where JSONC allows them."""
        text, n = self.text, len(self.text)
        while self.i < n:
            c = text[self.i]
            if c in _WS:
                self.i += 1
            elif self.jsonc and text.startswith("//", self.i):
                end = text.find("\n", self.i)
                self.i = n if end < 0 else end
            elif self.jsonc and text.startswith("/*", self.i):
                end = text.find("*/", self.i + 2)
                if end < 0:
                    raise self.fail("an unterminated comment")
                self.i = end + 2
            else:
                return

    def document(self) -> Node:
        self.skip()
        node = self.value()
        self.skip()
        if self.i != len(self.text):
            raise self.fail("text after the end of the JSON value")
        return node

    def value(self) -> Node:
        text = self.text
        if self.i >= len(text):
            raise self.fail("the text ends where a value was expected")
        c = text[self.i]
        if c == "{":
            return self.obj()
        if c == "[":
            return self.array()
        if c == '"':
            start = self.i
            string = self.string()
            return Node(start, self.i, string)
        for word, literal in (("true", True), ("false", False), ("null", None)):
            if text.startswith(word, self.i):
                start, self.i = self.i, self.i + len(word)
                return Node(start, self.i, literal)
        match = _NUMBER.match(text, self.i)
        if match is None or match.end() == self.i:
            raise self.fail("a value was expected")
        start, self.i = self.i, match.end()
        return Node(start, self.i, json.loads(match.group()))

    def string(self) -> str:
        start = self.i
        text = self.text
        i = start + 1
        while True:
            j = text.find('"', i)
            if j < 0:
                raise self.fail("an unterminated string")
            backslashes = 0
            k = j - 1
            while text[k] == "\\":
                backslashes += 1
                k -= 1
            if backslashes % 2 == 0:
                break
            i = j + 1
        self.i = j + 1
        try:
            value = json.loads(text[start : j + 1])
        except ValueError:
            raise self.fail("a malformed string") from None
        assert isinstance(value, str)
        return value

    def array(self) -> Node:
        start = self.i
        self.i += 1
        items: list[Any] = []
        self.skip()
        if self.text.startswith("]", self.i):
            self.i += 1
            return Node(start, self.i, items)
        while True:
            items.append(self.value().data)
            self.skip()
            if self.text.startswith(",", self.i):
                self.i += 1
                self.skip()
                if self.jsonc and self.text.startswith("]", self.i):
                    self.i += 1
                    return Node(start, self.i, items)
                continue
            if self.text.startswith("]", self.i):
                self.i += 1
                return Node(start, self.i, items)
            raise self.fail("',' or ']' was expected")

    def obj(self) -> Node:
        start = self.i
        self.i += 1
        members: list[Member] = []
        data: dict[str, Any] = {}
        self.skip()
        if self.text.startswith("}", self.i):
            self.i += 1
            return Node(start, self.i, data, members, is_object=True)
        while True:
            if not self.text.startswith('"', self.i):
                raise self.fail("a key in double quotes was expected")
            key_start = self.i
            key = self.string()
            self.skip()
            if not self.text.startswith(":", self.i):
                raise self.fail("':' was expected")
            self.i += 1
            self.skip()
            value = self.value()
            member = Member(key, key_start, value.start, value.end, value)
            members.append(member)
            data[key] = value.data
            self.skip()
            if self.text.startswith(",", self.i):
                member.comma = self.i
                self.i += 1
                self.skip()
                if self.jsonc and self.text.startswith("}", self.i):
                    self.i += 1
                    return Node(start, self.i, data, members, is_object=True)
                continue
            if self.text.startswith("}", self.i):
                self.i += 1
                return Node(start, self.i, data, members, is_object=True)
            raise self.fail("',' or '}' was expected")


def parse(text: str, *, jsonc: bool = False) -> Node:
    """The document's spans; ``JsonEditError`` when it is not JSON (JSONC with ``jsonc``). An empty
    (or blank) text is an empty object."""
    if not text.strip(_WS):
        return Node(0, 0, {}, is_object=True)
    return _Parser(text, jsonc=jsonc).document()


def loads(text: str, *, jsonc: bool = False) -> Any:
    """The document's data (``parse``'s, so JSONC reads as the edit reads it)."""
    return parse(text, jsonc=jsonc).data


def get_entry(text: str, path: Sequence[str], *, jsonc: bool = False) -> Any:
    """The value at ``path`` (keys of nested objects), or None when some key is absent."""
    data = loads(text, jsonc=jsonc)
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def set_entry(text: str, path: Sequence[str], value: Any, *, jsonc: bool = False) -> str:
    """``text`` with ``value`` at ``path``, every other byte kept (see the module's docstring)."""
    if not path:
        raise ValueError("an entry needs a path")
    root = _root(text, jsonc)
    if not text.strip(_WS):  # a new file
        text = "{}\n"
        root = parse(text)
    expected = _with(root.data, path, value)
    node, depth = root, 0
    while depth < len(path):
        member = _last(node, path[depth])
        if member is None:
            break
        if depth == len(path) - 1:
            if member.value.data == value and type(member.value.data) is type(value):
                return text
            one_line = "\n" not in text.strip(_WS)
            indent = _indent_of(text, member.key_start)
            rendered = _compact(value) if one_line else _render(value, indent, _unit(text), _newline(text))
            text = text[: member.value_start] + rendered + text[member.value_end :]
            return _checked(text, expected, jsonc)
        if not member.value.is_object:
            where = ".".join(path[: depth + 1])
            raise JsonEditError(f"its '{where}' value is not an object; fix it first")
        node, depth = member.value, depth + 1
    wrapped: Any = value
    for key in reversed(path[depth + 1 :]):
        wrapped = {key: wrapped}
    text = _insert(text, node, path[depth], wrapped)
    return _checked(text, expected, jsonc)


def absent_objects(text: str, path: Sequence[str], *, jsonc: bool = False) -> int:
    """How many of the objects that enclose ``path``'s member are not in ``text`` (``set_entry``
    makes them): what ``remove_entry`` may take out again once they are left empty."""
    node = _root(text, jsonc)
    for depth, key in enumerate(path[:-1]):
        member = _last(node, key)
        if member is None or not member.value.is_object:
            return len(path) - 1 - depth
        node = member.value
    return 0


def remove_entry(text: str, path: Sequence[str], *, jsonc: bool = False, drop_objects: int = 0) -> str:
    """``text`` without the member at ``path`` (every member of that key), and without each of the
    ``drop_objects`` innermost enclosing members whose object it leaves as ``{}`` (the ones the
    install made, ``absent_objects``); ``text`` itself when there is no such member."""
    if not path:
        raise ValueError("an entry needs a path")
    root = _root(text, jsonc)
    holder = _object_at(root, path[:-1])
    if holder is None or _last(holder, path[-1]) is None:
        return text
    data = root.data
    depth = len(path)
    while True:
        while True:  # every member of that key (a duplicated key is one entry to its readers)
            container = _object_at(parse(text, jsonc=jsonc), path[: depth - 1])
            assert container is not None
            member = _last(container, path[depth - 1])
            if member is None:
                break
            text = _remove(text, container, member)
        data = _without(data, path[:depth])
        text = _checked(text, data, jsonc)
        depth -= 1
        if depth == 0 or len(path) - depth > drop_objects or text[container.start : container.end] != "{}":
            return text


def _object_at(node: Node, path: Sequence[str]) -> Node | None:
    """The object at ``path`` below ``node``, or None when a key is absent or not an object."""
    for key in path:
        member = _last(node, key)
        if member is None or not member.value.is_object:
            return None
        node = member.value
    return node if node.is_object else None


def _root(text: str, jsonc: bool) -> Node:
    root = parse(text, jsonc=jsonc)
    if not root.is_object:
        raise JsonEditError("it does not hold a JSON object")
    return root


def _last(node: Node, key: str) -> Member | None:
    """The member a reader takes for ``key``: the last one of that name."""
    found = [m for m in node.members if m.key == key]
    return found[-1] if found else None


def _with(data: Any, path: Sequence[str], value: Any) -> Any:
    copy = json.loads(json.dumps(data))
    here = copy
    for key in path[:-1]:
        if not isinstance(here.get(key), dict):
            here[key] = {}
        here = here[key]
    here[path[-1]] = value
    return copy


def _without(data: Any, path: Sequence[str]) -> Any:
    copy = json.loads(json.dumps(data))
    here = copy
    for key in path[:-1]:
        here = here[key]
    del here[path[-1]]
    return copy


def _checked(text: str, expected: Any, jsonc: bool) -> str:
    """``text``, once it parses to ``expected`` (a splice that went wrong is a bug, never a write)."""
    try:
        data = loads(text, jsonc=jsonc)
    except JsonEditError as exc:  # pragma: no cover - a splice bug
        raise JsonEditError(f"the edited text would not parse ({exc}); nothing was changed") from None
    if json.dumps(data, sort_keys=True) != json.dumps(expected, sort_keys=True):  # pragma: no cover
        raise JsonEditError("the edited text would not hold what was meant; nothing was changed")
    return text


def _unit(text: str) -> str:
    """The file's indentation step: the first indented line's, else two spaces."""
    for line in text.splitlines():
        stripped = line.lstrip(" \t")
        if stripped and stripped != line:
            lead = line[: len(line) - len(stripped)]
            return "\t" if lead.startswith("\t") else " " * len(lead)
    return "  "


def _indent_of(text: str, at: int) -> str:
    """The whitespace that starts the line holding ``at``."""
    line_start = text.rfind("\n", 0, at) + 1
    line = text[line_start:at]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _render(value: Any, indent: str, unit: str, nl: str = "\n") -> str:
    """``value`` as JSON, nested lines indented by ``unit`` from ``indent``, ending in ``nl``."""
    text = json.dumps(value, indent=unit, ensure_ascii=False)
    return text.replace("\n", nl + indent)


def _newline(text: str) -> str:
    """The file's line ending: CRLF when it uses one, else LF."""
    return "\r\n" if "\r\n" in text else "\n"


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _insert(text: str, node: Node, key: str, value: Any) -> str:
    """``text`` with the member ``key: value`` added at the end of the object ``node``."""
    unit, nl = _unit(text), _newline(text)
    one_line = "\n" not in text.strip(_WS) and text.strip(_WS) != "{}"
    name = _compact(key)
    if not node.members:
        inside = text[node.start + 1 : node.end - 1]
        if one_line and not inside.strip(_WS):
            return text[: node.start] + "{" + f"{name}: {_compact(value)}" + "}" + text[node.end :]
        outer = _indent_of(text, node.start)
        member = f"{name}: {_render(value, outer + unit, unit, nl)}"
        close = node.end - 1
        if inside.strip(_WS):  # only comments inside: they stay, the member comes after them
            base = text[:close].rstrip(" \t")
            base += "" if base.endswith("\n") else nl
            return base + f"{outer}{unit}{member}{nl}{outer}" + text[close:]
        return text[: node.start] + "{" + nl + outer + unit + member + nl + outer + "}" + text[node.end :]
    last = node.members[-1]
    if "\n" not in text[node.start : node.end]:  # an object on one line gets the member on it
        return text[: last.value_end] + f", {name}: {_compact(value)}" + text[last.value_end :]
    indent = _indent_of(text, last.key_start)
    # A trailing comma after the last member (JSONC) is the file's style: the new member gets one too.
    member = f"{name}: {_render(value, indent, unit, nl)}" + ("," if last.comma is not None else "")
    # After the last member's line: its comma (added unless there is one) and any comment stay on it.
    after = last.value_end if last.comma is None else last.comma + 1
    head = text[: last.value_end] + ("," if last.comma is None else "") + text[last.value_end : after]
    rest_end = text.find("\n", after)
    rest = text[after : rest_end if rest_end >= 0 else len(text)]
    if rest_end >= 0 and _comments_only(rest):
        cr = "\r" if rest.endswith("\r") else ""
        return head + rest[: len(rest) - len(cr)] + nl + indent + member + cr + text[rest_end:]
    return head + nl + indent + member + text[after:]


def _comments_only(rest: str) -> bool:
    """Whether the rest of a line holds nothing but blanks and comments (``/* */`` closed on it, a
    final ``//``): they stay on the line of the value they follow."""
    rest = rest.strip(" \t\r")
    while rest.startswith("/*"):
        end = rest.find("*/", 2)
        if end < 0:
            return False
        rest = rest[end + 2 :].lstrip(" \t\r")
    return not rest or rest.startswith("//")


def _remove(text: str, node: Node, member: Member) -> str:
    """``text`` without ``member`` of ``node``, the commas and lines around it tidied."""
    index = next(i for i, m in enumerate(node.members) if m is member)
    start = member.key_start
    end = member.value_end if member.comma is None else member.comma + 1
    line_start = text.rfind("\n", 0, start) + 1
    own_line = not text[line_start:start].strip(" \t")
    line_end = text.find("\n", end)
    rest = text[end : line_end if line_end >= 0 else len(text)]
    if own_line and not rest.strip(" \t\r") and line_end >= 0:
        start, end = line_start, line_end + 1  # the whole line goes
    elif member.comma is not None:
        end += len(rest) - len(rest.lstrip(" \t"))  # and the space after its comma
    if len(node.members) == 1:
        left = text[node.start + 1 : start] + text[end : node.end - 1]
        if not left.strip(_WS):  # nothing else inside: the object becomes {} again
            return text[: node.start + 1] + text[node.end - 1 :]
        return text[:start] + text[end:]
    if member.comma is None:  # the last member: its predecessor's comma goes with it
        before = node.members[index - 1]
        assert before.comma is not None
        gap = text[before.comma + 1 : member.key_start]
        if not own_line and not gap.strip(" \t"):
            return text[: before.comma] + text[member.value_end :]
        return text[: before.comma] + text[before.comma + 1 : start] + text[end:]
    return text[:start] + text[end:]

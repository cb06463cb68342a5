"""Aider 0.86: one session of ``.aider.chat.history.md``, named ``<file>#<offset of its header>``.

The file is Markdown Aider appends to (``aider.utils.split_chat_history_markdown`` is its own
reader):

- ``# aider chat started at YYYY-MM-DD HH:MM:SS`` starts a session (local time, no zone). The
  session runs to the next such line; the last one of the file grows while Aider runs.
- ``#### text`` is a line the user typed (several in a row: one message). A slash command is
  the user's action, not words: ``/run`` (and ``!``) runs a command, ``/web`` fetches a page,
  ``/add``, ``/read-only``... are tool calls here, and the ``>`` lines after them are their
  output. ``/ask``, ``/code``, ``/architect`` and ``/context`` carry a prompt: a user turn.
- ``> text`` is Aider's own output (only its first line is prefixed: the lines right under it,
  before a blank line, are its too; the model's reply always starts after a blank line): the command line it was started with (its ``sys.argv``, so a
  ``--message`` prompt appears there a second time: memd keeps only whether it was headless),
  its version, the working folders, files added, edits applied, commits, errors. It is tool
  output, quoted, never a turn.
- Any other line is the model's reply, verbatim (a reply line that itself begins with ``> `` or
  ``#### `` cannot be told from Aider's, as in Aider's own reader).

No line carries a time: a session starts at its header's time, and its last activity is the next
header's time, or the file's modification time for the last session. The project is the ``Git
working dir:`` Aider logs (when the working folder is another), else the file's folder (Aider
writes it in the git root). The session id is derived from the file and the header's offset and
text, so it is stable while the file is only appended to.

Every parse reads the whole session (its size learned from the walk, and capped), on a descriptor
opened without following a symlink and checked to be a regular file.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from pipeline.agents.aider import HEADER, MEMORY_FILE, NAME, SEPARATOR, discover, walk
from pipeline.errors import TranscriptIncomplete, TranscriptUnreadable
from pipeline.safefile import UnsafeFile, open_regular, read_at_most
from pipeline.sources._collector import Collector, Summary
from pipeline.sources._discover import describe_os_error
from pipeline.sources.base import ParseResult, ParserState, last_guard
from pipeline.sources.walk import Walked
from pipeline.transcript import Transcript

SESSION_MAX_BYTES = 32 << 20
"""A session larger than this is not read (unreadable, with the reason)."""
STATE_VERSION = 1
_TIME_RE = re.compile(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")
_PROMPT_COMMANDS = frozenset({"ask", "code", "architect", "context"})
_HEADLESS_FLAGS = ("--message", "-m", "--message-file", "-f", "--msg")
_ARGV_RE = re.compile(r"^\S*aider(?:\.exe)?(?:\s|$)")


def header_time(line: str) -> datetime | None:
    """The local time of a header line, as an aware datetime (None when it has none)."""
    match = _TIME_RE.search(line)
    if match is None:
        return None
    try:
        return datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S").astimezone()
    except ValueError:
        return None


def headless(argv_line: str) -> bool:
    """Whether Aider's echoed command line ran a message and exited (``--message``/``-m``,
    ``--message-file``/``-f``)."""
    try:
        words = shlex.split(argv_line)
    except ValueError:
        words = argv_line.split()
    return any(w in _HEADLESS_FLAGS or w.startswith(("--message=", "--message-file=")) for w in words[1:])


def split_path(path: Path) -> tuple[str, int] | None:
    """``<file>#<offset>`` -> (file, offset)."""
    file, sep, offset = str(path).rpartition(SEPARATOR)
    if not sep or not offset.isdigit():
        return None
    return file, int(offset)


class _Reader:
    """Folds one session's lines into a ``Collector``."""

    def __init__(self, c: Collector, folder: str) -> None:
        self.c = c
        self.folder = folder
        self.user: list[str] = []
        self.reply: list[str] = []
        self.output: list[list[str]] = []
        self.continues = False
        self.call_id: str | None = None
        self.calls = 0
        self.git_dir: str | None = None

    def line(self, text: str) -> None:
        if text.startswith("####"):
            self._flush_reply()
            self._flush_output()
            self.user.append(text[4:].strip())
            self.continues = False
        elif text.startswith(">"):
            self._flush_user()
            self._flush_reply()
            self.output.append([text[1:].strip()])
            self.continues = True
        elif self.continues and text.strip():
            # Aider prefixes only the first line of a message of its own; the model's reply always
            # starts after a blank line, so a line right under one of Aider's is Aider's too.
            self.output[-1].append(text.rstrip())
        else:
            self._flush_user()
            self._flush_output()
            self.reply.append(text)
            self.continues = False

    def end(self) -> None:
        self._flush_user()
        self._flush_reply()
        self._flush_output()

    def _flush_user(self) -> None:
        if not self.user:
            return
        lines, self.user = self.user, []
        text = "\n".join(lines).strip()
        if not text:
            return
        if text.startswith("!"):
            self._command("run", text[1:].strip())
            return
        if text.startswith("/"):
            word, _, rest = text[1:].partition(" ")
            word = word.strip()
            if word in _PROMPT_COMMANDS and rest.strip():
                self.c.user_prompt(rest.strip(), None)
                return
            self._command(word, rest.strip())
            return
        self.c.user_prompt(text, None)

    def _command(self, name: str, rest: str) -> None:
        self.calls += 1
        call_id = f"aider-{self.calls}"
        if name == "run":
            args: dict[str, str] = {"command": rest}
        elif name == "web":
            args = {"url": rest}
            self.c.external("web_fetch")
        else:
            args = {"path": rest} if rest else {}
        self.c.tool_call(name, args, call_id, None)
        self.call_id = call_id

    def _flush_reply(self) -> None:
        if not self.reply:
            return
        lines, self.reply = self.reply, []
        text = "\n".join(lines).strip()
        if text:
            self.call_id = None
            self.c.assistant_text(text, None)

    def _flush_output(self) -> None:
        if not self.output:
            return
        entries, self.output = self.output, []
        kept: list[str] = []
        for entry in entries:
            if _ARGV_RE.match(entry[0]):  # a multi-line prompt continues it: all of it goes
                self.c.s.non_interactive = self.c.s.non_interactive or headless(" ".join(entry))
                kept.append("[the command line Aider was started with]")
                continue
            self._note(entry[0])
            kept.extend(entry)
        text = "\n".join(kept).strip()
        if not text:
            return
        call_id = self.call_id
        if call_id is None:
            self.calls += 1
            call_id = f"aider-{self.calls}"
            self.c.tool_call("aider", {}, call_id, None)
        self.call_id = None
        failed = any(line.lower().startswith(("error", "litellm.")) for line in kept)
        self.c.tool_result(call_id, text, failed, None)

    def _note(self, line: str) -> None:
        s = self.c.s
        if line.startswith("Aider v") and s.agent_version is None:
            s.agent_version = line.removeprefix("Aider v").split()[0] if line.split() else None
        elif line.startswith("Git working dir:"):
            self.git_dir = line.partition(":")[2].strip() or None
        elif line.startswith("Added ") and line.endswith("to the chat (read-only).") and MEMORY_FILE in line:
            name = line.removeprefix("Added ").removesuffix(" to the chat (read-only).")
            path = name if os.path.isabs(name) else os.path.join(self.git_dir or self.folder, name)
            self.c.memory_read(path, "injected", None)


class AiderAdapter:
    """Aider's chat history, one session (``<file>#<offset>``) at a time."""

    source: str = NAME

    def discover_paths(self, root: Path) -> Iterator[str]:
        return discover(root)

    def discover(self, root: Path) -> Iterator[Path]:
        return map(Path, discover(root))

    def walk(self, root: Path) -> list[Walked]:
        return walk(root)

    def parse(
        self,
        path: Path,
        start_offset: int = 0,
        state: ParserState | None = None,
        *,
        with_items: bool = True,
        max_bytes: int | None = None,
    ) -> ParseResult:
        return last_guard(
            self.source,
            path,
            start_offset,
            state,
            lambda: self._parse(path, start_offset, state, with_items, max_bytes),
        )

    def _parse(
        self,
        path: Path,
        start_offset: int,
        state: ParserState | None,
        with_items: bool,
        max_bytes: int | None,
    ) -> ParseResult:
        where = split_path(path)
        if where is None:
            return ParseResult(
                None, start_offset, state, TranscriptUnreadable("not a session of an Aider history")
            )
        file, offset = where
        try:
            fd, info = open_regular(file, follow_symlinks=False)
        except UnsafeFile as exc:
            return ParseResult(None, start_offset, state, describe_os_error(Path(file), exc))
        except OSError as exc:
            if Path(file).is_symlink():
                reason = "a symbolic link, which memd does not follow for Aider's history"
                return ParseResult(None, start_offset, state, TranscriptUnreadable(reason))
            return ParseResult(None, start_offset, state, describe_os_error(Path(file), exc))
        try:
            available = max(0, info.st_size - offset)
            length = min(max_bytes, available) if max_bytes is not None else available
            if length > SESSION_MAX_BYTES:
                reason = f"the session is larger than memd reads ({length} > {SESSION_MAX_BYTES} bytes)"
                return ParseResult(None, start_offset, state, TranscriptUnreadable(reason))
            os.lseek(fd, offset, os.SEEK_SET)
            data = read_at_most(fd, length)
            after = os.pread(fd, 128, offset + len(data))
        except OSError as exc:
            return ParseResult(None, start_offset, state, describe_os_error(Path(file), exc))
        finally:
            os.close(fd)
        if not data.startswith(HEADER):
            reason = "no `# aider chat started at` line where this session began: the file was rewritten"
            return ParseResult(None, start_offset, state, TranscriptUnreadable(reason))
        if max_bytes is None:  # read to the next session's header
            cut = data.find(b"\n" + HEADER)
            if cut >= 0:
                after, data = data[cut + 1 : cut + 129], data[: cut + 1]
        complete = data.rfind(b"\n") + 1
        if complete == 0:
            return ParseResult(
                None, 0, None, TranscriptIncomplete("the session's first line is not complete yet")
            )
        text = data[:complete].decode("utf-8", "replace").replace("\0", "")
        lines = text.split("\n")[:-1]
        summary = Summary(source=self.source)
        c = Collector(summary, self.source, with_items=with_items)
        header = lines[0]
        started = header_time(header)
        summary.see_time(started)
        folder = os.path.dirname(file)
        reader = _Reader(c, folder)
        for line in lines[1:]:
            summary.lines += 1
            reader.line(line.rstrip("\r"))
        reader.end()
        ended = (
            header_time(after.split(b"\n", 1)[0].decode("utf-8", "replace"))
            if after.startswith(HEADER)
            else None
        )
        mtime = datetime.fromtimestamp(info.st_mtime_ns / 1e9, tz=UTC)
        summary.see_time(min(ended, mtime) if ended is not None else mtime)
        summary.session_id = (
            "aider-" + hashlib.sha256(f"{file}\0{offset}\0{header}".encode()).hexdigest()[:24]
        )
        summary.cwd = reader.git_dir or folder
        transcript: Transcript = c.transcript(path, complete, fallback_id=summary.session_id)
        return ParseResult(
            transcript, complete, {"v": STATE_VERSION}, None, restarted=False, bytes_read=len(data)
        )

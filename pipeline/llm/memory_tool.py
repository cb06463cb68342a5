"""The consolidation agent's only tool: the SDK's memory tool (``memory_20250818``), confined.

``ConfinedMemoryTool`` subclasses ``BetaAsyncLocalFilesystemMemoryTool`` with its ``/memories`` root
set to one scope's folder in a scratch copy of the memory repository (``.git`` is above it, never
inside). On top of the SDK's own checks it refuses, before anything touches the disk:

- any input that is not a well-formed command (the SDK does not validate tool input);
- paths other than ``/memories`` or below it (so ``/memoriesX`` and absolute paths are out),
  ``..``/``.`` or any hidden component (``.git``), backslashes and control characters;
- a path through a symlink, anywhere below the root, wherever it points;
- writes to the phase-1 inputs memd materializes (``raw_memories.md``, ``rollout_summaries/``);
- creating anything but a ``.md`` file;
- a file over its cap (MEMORY.md, the summary and topic files each have one), and more than
  ``max_total_write_bytes`` written in one run.

``create`` on an existing file replaces it atomically (the SDK refuses), which is what models expect.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import structlog
from anthropic.lib.tools import BetaFunctionToolResultType, ToolError
from anthropic.tools import BetaAsyncLocalFilesystemMemoryTool
from anthropic.types.beta import BetaMemoryTool20250818CreateCommand
from anyio import Path as AsyncPath
from anyio.to_thread import run_sync

log = structlog.get_logger(__name__)

ROOT = "/memories"
MAX_PATH_CHARS = 300
HARD_MAX_CONTENT_BYTES = 1_000_000
DEFAULT_MAX_TOTAL_WRITE_BYTES = 4_000_000

_FIELDS: dict[str, dict[str, type]] = {
    "view": {"path": str},
    "create": {"path": str, "file_text": str},
    "str_replace": {"path": str, "old_str": str, "new_str": str},
    "insert": {"path": str, "insert_line": int, "insert_text": str},
    "delete": {"path": str},
    "rename": {"old_path": str, "new_path": str},
}


class ConfinedMemoryTool(BetaAsyncLocalFilesystemMemoryTool):
    """The memory tool, rooted at ``root`` and refusing everything outside memd's rules."""

    def __init__(
        self,
        root: Path,
        *,
        max_bytes_for: Callable[[str], int],
        read_only: Callable[[str], bool] = lambda _rel: False,
        allowed_suffixes: tuple[str, ...] = (".md",),
        max_total_write_bytes: int = DEFAULT_MAX_TOTAL_WRITE_BYTES,
    ) -> None:
        super().__init__(base_path=str(root.parent))
        if root.is_symlink() or not root.is_dir():
            raise ValueError(f"the memory root must be an existing real directory: {root}")
        self.root = root
        self.memory_root = AsyncPath(root)
        self.max_bytes_for = max_bytes_for
        self.read_only = read_only
        self.allowed_suffixes = allowed_suffixes
        self.max_total_write_bytes = max_total_write_bytes
        self.written_bytes = 0
        self.refusals: list[str] = []
        self.calls = 0

    async def call(self, input: object) -> BetaFunctionToolResultType:
        self.calls += 1
        try:
            await run_sync(self._check, input)
            return await super().call(input)
        except ToolError as exc:
            self._refuse(input, str(exc))
            raise
        except OSError as exc:
            self._refuse(input, exc.strerror or type(exc).__name__)
            raise ToolError(f"filesystem error: {exc.strerror or type(exc).__name__}") from None

    def _refuse(self, input: object, reason: str) -> None:
        command = input.get("command") if isinstance(input, dict) else None
        self.refusals.append(f"{command}: {reason}")
        # the model's mistake, told to the model and kept in ``refusals``: no warning for the person
        log.info("memory_tool_refused", command=str(command)[:20], reason=reason[:200])

    # ------------------------------------------------------------ checks (run in a worker thread)

    def _check(self, input: object) -> None:
        if not isinstance(input, dict):
            raise ToolError("the tool input must be an object")
        command = input.get("command")
        if not isinstance(command, str) or command not in _FIELDS:
            raise ToolError(f"unknown command {str(command)[:30]!r}; use one of {', '.join(_FIELDS)}")
        for name, kind in _FIELDS[command].items():
            value = input.get(name)
            if not isinstance(value, kind) or isinstance(value, bool):
                raise ToolError(f"{command} needs '{name}' ({kind.__name__})")
        view_range = input.get("view_range")
        if view_range is not None and not (
            isinstance(view_range, list) and len(view_range) == 2 and all(type(v) is int for v in view_range)
        ):
            raise ToolError("view_range must be two line numbers [start, end]")
        if command == "rename":
            old = self._rel(input["old_path"])
            new = self._rel(input["new_path"])
            self._check_write(old, must_exist=True)
            self._check_write(new, must_exist=False)
            old_full = self.root / old
            if old_full.is_file():
                self._check_suffix(new)
                self._check_size(new, old_full.stat().st_size)
            return
        rel = self._rel(input["path"])
        if command == "view":
            return
        self._check_write(rel, must_exist=command != "create")
        if command != "delete":
            self._check_suffix(rel)
        self._check_content(command, rel, input)

    def _rel(self, path: str) -> str:
        """The path relative to the root ('' for the root), or a ToolError saying why not."""
        if len(path) > MAX_PATH_CHARS or any(ord(c) < 32 or c == "\x7f" for c in path) or "\\" in path:
            raise ToolError(f"invalid path: {path[:80]!r}")
        if path == ROOT or path == ROOT + "/":
            return ""
        if not path.startswith(ROOT + "/"):
            raise ToolError(f"paths must be {ROOT} or below it, got: {path[:80]}")
        parts = path[len(ROOT) + 1 :].rstrip("/").split("/")
        for part in parts:
            if not part:
                raise ToolError(f"empty path component in {path[:80]}")
            if part.startswith("."):
                raise ToolError(f"hidden files and folders (and '.'/'..') are not allowed: {path[:80]}")
        current = self.root
        for part in parts:
            current = current / part
            try:
                st = os.lstat(current)
            except FileNotFoundError:
                break
            if stat.S_ISLNK(st.st_mode):
                raise ToolError(f"symlinks are not allowed: {path[:80]}")
            if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
                raise ToolError(f"not a file or folder: {path[:80]}")
        return "/".join(parts)

    def _check_write(self, rel: str, *, must_exist: bool) -> None:
        if rel == "":
            raise ToolError(f"{ROOT} itself cannot be changed")
        if self.read_only(rel):
            raise ToolError(f"/memories/{rel} is an input memd maintains; it is read-only")
        if must_exist and not (self.root / rel).exists():
            raise ToolError(f"the path /memories/{rel} does not exist")

    def _check_suffix(self, rel: str) -> None:
        if not rel.endswith(self.allowed_suffixes):
            raise ToolError(f"only {', '.join(self.allowed_suffixes)} files may be written: /memories/{rel}")

    def _check_size(self, rel: str, size: int) -> None:
        cap = self.max_bytes_for(rel)
        if size > cap:
            raise ToolError(f"/memories/{rel} would be {size} bytes, over its cap of {cap} bytes; shorten it")

    def _check_content(self, command: str, rel: str, input: dict[str, Any]) -> None:
        if command == "delete":
            return
        added = "".join(str(input.get(k, "")) for k in ("file_text", "new_str", "insert_text")).encode(
            "utf-8"
        )
        if len(added) > HARD_MAX_CONTENT_BYTES:
            raise ToolError(f"content of {len(added)} bytes refused (at most {HARD_MAX_CONTENT_BYTES})")
        full = self.root / rel
        current = full.stat().st_size if full.is_file() else 0
        if command == "create":
            projected = len(added)
        elif command == "str_replace":
            projected = current - len(input["old_str"].encode("utf-8")) + len(added)
        else:
            projected = current + len(added) + 1
        self._check_size(rel, projected)
        if self.written_bytes + len(added) > self.max_total_write_bytes:
            raise ToolError(
                f"this run may write at most {self.max_total_write_bytes} bytes; stop and finish up"
            )
        self.written_bytes += len(added)

    # ------------------------------------------------------------ create may replace

    async def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        full = self.root / self._rel(command.path)
        if full.is_file():
            await run_sync(_replace_file, full, command.file_text)
            return f"File overwritten successfully at: {command.path}"
        return await super().create(command)


def _replace_file(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".memd-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise

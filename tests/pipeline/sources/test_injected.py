from __future__ import annotations

import pytest

from pipeline.agents.codex import injected as codex_injected
from pipeline.agents.codex.injected import is_codex_injected_user_text, is_codex_memory_instructions
from pipeline.sources.injected import (
    MEMD_BLOCK_REFERENCE,
    RECALL_BEGIN,
    RECALL_END,
    attachment_memory_paths,
    has_recall,
    is_instruction_attachment,
    is_memd_topic_path,
    is_memory_index_path,
    memory_file_reference,
    reminder_memory_paths,
    strip_injected,
)


def test_the_recall_markers_are_the_published_constants() -> None:
    assert (RECALL_BEGIN, RECALL_END) == ("<memd-recall>", "</memd-recall>")


@pytest.mark.parametrize("source", ["claude_code", "codex", "gemini_cli", "pi"])
def test_a_recall_block_is_stripped_from_every_source(source: str) -> None:
    text = f"before\n{RECALL_BEGIN}\n- use pnpm\n{RECALL_END}\nafter"
    clean, had = strip_injected(text, source)  # type: ignore[arg-type]
    assert had
    assert clean == "before\n\nafter"


def test_an_unterminated_recall_block_is_stripped_to_the_end() -> None:
    clean, had = strip_injected(f"ask\n{RECALL_BEGIN}\n- cut off", "claude_code")
    assert (clean, had) == ("ask", True)


def test_text_without_a_recall_block_is_not_reported_as_recall() -> None:
    assert not has_recall("<memd-recalls> is not ours")
    code = 'RECALL_BEGIN = "<memd-recall>"\nRECALL_END = "</memd-recall>"\nrest of the file'
    assert strip_injected(code, "claude_code") == (code, False)
    assert strip_injected("plain words", "pi") == ("plain words", False)


def test_claude_system_reminders_with_claude_md_and_auto_memory_are_stripped() -> None:
    text = (
        "Fix the bug.\n<system-reminder>\nContents of /p/CLAUDE.md (project instructions):\n\nUse pnpm.\n"
        "Contents of /h/.claude/projects/-p/memory/MEMORY.md (user's auto-memory):\n\n- x\n</system-reminder>"
    )
    assert strip_injected(text, "claude_code") == ("Fix the bug.", False)


def test_system_reminders_are_only_a_claude_code_convention() -> None:
    text = "<system-reminder>kept</system-reminder> q"
    assert strip_injected(text, "pi")[0] == text


def test_codex_memory_summary_block_is_stripped() -> None:
    text = (
        "## Memory\nread it\n========= MEMORY_SUMMARY BEGINS =========\nv1\n- prefers pnpm\n"
        "========= MEMORY_SUMMARY ENDS =========\ntail"
    )
    assert is_codex_memory_instructions(text)
    clean, _ = strip_injected(text, "codex")
    assert "prefers pnpm" not in clean
    assert clean.endswith("tail")


@pytest.mark.parametrize(
    "text",
    [
        "# AGENTS.md instructions for /home/dev/shop\n\n<INSTRUCTIONS>\nUse pnpm.\n</INSTRUCTIONS>",
        "<environment_context>\n  <cwd>/x</cwd>\n</environment_context>",
        "<user_instructions>be terse</user_instructions>",
    ],
)
def test_codex_context_messages_are_not_user_prompts(text: str) -> None:
    assert is_codex_injected_user_text(text)


def test_a_codex_prompt_is_not_context() -> None:
    assert not is_codex_injected_user_text("fix the AGENTS.md instructions for the repo")


def test_codex_ide_context_keeps_only_the_request() -> None:
    text = "# Context from my IDE setup:\n\n## Active file: a.ts\n\n## My request for Codex:\nAdd retries"
    assert codex_injected.strip_codex_ide_context(text).strip() == "Add retries"


def test_gemini_session_context_with_gemini_md_is_stripped() -> None:
    text = (
        "<session_context>\nThis is the Gemini CLI.\n--- Context from: GEMINI.md ---\nUse pnpm.\n"
        "--- End of Context from: GEMINI.md ---\n</session_context>"
    )
    assert strip_injected(text, "gemini_cli") == ("", False)
    memory = "--- Context from: GEMINI.md ---\nrules\n--- End of Context from: GEMINI.md ---\nreal question"
    assert strip_injected(memory, "gemini_cli")[0] == "real question"


def test_a_memd_sentinel_block_in_other_text_becomes_a_reference() -> None:
    text = "# mine\n<!-- memd:begin -->\n- theirs\n<!-- memd:end -->\n# also mine"
    clean, _ = strip_injected(text, "codex")
    assert "theirs" not in clean
    assert MEMD_BLOCK_REFERENCE in clean
    assert clean.startswith("# mine")
    assert clean.endswith("# also mine")


@pytest.mark.parametrize(
    ("path", "topic", "index"),
    [
        ("/home/u/.claude/projects/-x/memory/memd-payments.md", True, False),
        ("/home/u/.codex/memories/memd-release.md", True, False),
        ("C:\\Users\\u\\.gemini\\tmp\\x\\memory\\memd-a.md", True, False),
        ("memory/memd-a.md", True, False),
        ("/home/u/.claude/projects/-x/memory/MEMORY.md", False, True),
        ("/home/u/.codex/memories/memory_summary.md", False, True),
        ("/home/u/src/memd-notes.md", False, False),
        ("/home/u/src/memory/notes.md", False, False),
    ],
)
def test_memory_paths(path: str, topic: bool, index: bool) -> None:
    assert is_memd_topic_path(path) is topic
    assert is_memory_index_path(path) is index


def test_the_reference_is_one_line_per_file() -> None:
    assert memory_file_reference(["/m/memd-a.md"]) == "[memd memory file read: /m/memd-a.md]"


def test_reminders_name_the_memd_files_claude_code_loaded() -> None:
    text = (
        "<system-reminder>\nContents of /m/memory/memd-a.md:\n\nx\n</system-reminder>"
        "<system-reminder>\nContents of /m/memory/MEMORY.md (auto-memory):\n\n<!-- memd:begin -->\n"
        "<!-- memd:end -->\n</system-reminder>"
        "<system-reminder>\nContents of /p/CLAUDE.md (project):\n\nrules\n</system-reminder>"
    )
    assert reminder_memory_paths(text) == ["/m/memory/memd-a.md", "/m/memory/MEMORY.md"]


def test_instruction_attachments() -> None:
    nested = {"type": "nested_memory", "path": "/p/sub/CLAUDE.md", "content": {"content": "rules"}}
    instructions = {
        "type": "instructions",
        "files": [{"path": "/m/memory/MEMORY.md", "content": "<!-- memd:begin -->"}],
    }
    queued = {"type": "queued_command", "prompt": "also the changelog"}
    assert is_instruction_attachment(nested)
    assert is_instruction_attachment(instructions)
    assert is_instruction_attachment({"type": "file", "filename": "x", "path": "/p/AGENTS.md"})
    assert not is_instruction_attachment(queued)
    assert attachment_memory_paths(nested) == []
    assert attachment_memory_paths(instructions) == ["/m/memory/MEMORY.md"]
    relevant = {"type": "relevant_memories", "memories": [{"path": "/m/memory/memd-x.md", "content": "y"}]}
    assert attachment_memory_paths(relevant) == ["/m/memory/memd-x.md"]

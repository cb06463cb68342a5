"""MkDocs hook: the configuration reference is made from the one settings table at build time."""

from __future__ import annotations

from typing import Any

MARKER = "<!-- memd:settings-reference -->"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if MARKER not in markdown:
        return markdown
    from pipeline.settings import reference_markdown

    return markdown.replace(MARKER, reference_markdown())

"""Turning data into the page: the templates (Jinja, every value escaped), Markdown, and SVG charts.

Memory is text a model wrote, so it is never trusted as HTML: templates autoescape everything, and
Markdown is rendered by markdown-it with raw HTML off (a ``<script>`` in a topic file shows as
text). A link in memory stays a link only when it stays on memd's page (``own_link``: a heading on
the page, or a topic file beside this one); one to anywhere else (a scheme, a host, a
protocol-relative or backslashed path, an address of memd's own actions) and every image (``![]()``,
whatever its source) show as the Markdown text they were written as, so the page holds no markup
that leaves it or fetches. Charts are SVG drawn here, with no script and nothing fetched.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup, escape
from starlette.requests import Request
from starlette.responses import HTMLResponse

from pipeline import invisible
from pipeline.projects.scopes import short_name, topic_id_text

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE / "templates"
STATIC = HERE / "static"


@cache
def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = when
    env.filters["num"] = lambda n: f"{int(n or 0):,}"
    env.filters["usd"] = lambda v: f"${float(v or 0):.2f}"
    env.filters["pct"] = lambda v: "n/a" if v is None else f"{float(v) * 100:.0f}%"
    env.filters["short"] = lambda v, n=12: "" if v is None else str(v)[:n]
    env.globals.update(
        topic_url=topic_url, scope_url=scope_url, topic_id=topic_id_text, short_name=short_name
    )
    return env


def topic_url(scope: str, file: str) -> str:
    """The page's address of a topic file."""
    return "/memory/topic?" + urlencode({"scope": scope, "file": file})


def scope_url(scope: str) -> str:
    return "/memory/scope?" + urlencode({"scope": scope})


def page(request: Request, template: str, *, status_code: int = 200, **values: Any) -> HTMLResponse:
    """A whole page: the layout, the navigation, the CSRF token for its forms."""
    ui = request.app.state.ui
    values.setdefault("title", "")
    html = (
        environment()
        .get_template(template)
        .render(csrf=ui.guard.csrf, read_only=ui.guard.read_only, path=request.url.path, **values)
    )
    # An invisible character (a tag character spelling a hidden instruction) shows as its code point.
    return HTMLResponse(invisible.show(html, "&lt;U+{:04X}&gt;"), status_code=status_code)


def when(value: Any) -> str:
    """An ISO time as ``YYYY-MM-DD HH:MM`` (UTC), or a dash."""
    if value is None or value == "":
        return "-"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    return str(value)[:16].replace("T", " ")


@cache
def _markdown() -> Any:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable("table")
    md.validateLink = own_link  # type: ignore[method-assign]
    return md


def own_link(url: str) -> bool:
    """Whether ``url`` (a link's destination as markdown-it made it: entities decoded, then
    percent-encoded) stays on memd's page: ``#heading``, or a relative path with no scheme that
    does not start with a slash or backslash, raw or percent-encoded. Everything else (``https:``,
    ``//host``, ``/\\host``, ``mailto:``, ``data:``, an absolute path to one of memd's actions) is
    refused, and markdown-it leaves the link as text."""
    if url.startswith("#"):
        return True
    if not url or any(ch.isspace() or ord(ch) < 0x20 or ch == "\\" for ch in url):
        return False
    for form in (url, unquote(url)):
        if form[:1] in ("/", "\\") or "\\" in form:
            return False
        head = form.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
        if ":" in head:
            return False
    return True


def markdown(text: str, *, relative: Callable[[str], str] | None = None) -> Markup:
    """Markdown as HTML, with raw HTML shown as text and only harmless links kept; ``relative``
    turns a link to a file beside this one (``testing.md``) into the page's address for it."""
    from markdown_it.token import Token

    md = _markdown()
    tokens = md.parse(text)
    for token in tokens:
        if not token.children:
            continue
        for i, child in enumerate(token.children):
            if child.type == "image":  # never an <img>: the Markdown it was written as, as text
                src = child.attrGet("src")
                token.children[i] = Token("text", "", 0, content=f"![{child.content}]({src or ''})")
                continue
            href = child.attrGet("href") if child.type == "link_open" else None
            if relative is not None and isinstance(href, str) and href and not href.startswith("#"):
                child.attrSet("href", relative(href.split("#", 1)[0]))
    return Markup(md.renderer.render(tokens, md.options, {}))


def split_diff(patch: str, belongs: Callable[[str], bool]) -> tuple[str, str]:
    """A unified diff of several files as (the files ``belongs`` refuses, the files it takes), each
    file's part whole (``belongs`` is given the path after ``b/``)."""
    kept: list[str] = []
    taken: list[str] = []
    into = kept
    for line in patch.splitlines(keepends=True):
        if line.startswith("diff --git "):
            path = line.rstrip("\n").rsplit(" b/", 1)[-1]
            into = taken if belongs(path) else kept
        into.append(line)
    return "".join(kept), "".join(taken)


def diff_html(patch: str) -> Markup:
    """A unified diff, each line escaped and classed by what it does (added, removed, hunk, file)."""
    out = []
    for line in patch.splitlines():
        kind = (
            "file"
            if line.startswith(("diff --git", "+++", "---", "index "))
            else "add"
            if line.startswith("+")
            else "del"
            if line.startswith("-")
            else "hunk"
            if line.startswith("@@")
            else "ctx"
        )
        out.append(f'<span class="d-{kind}">{escape(line)}</span>')
    return Markup('<pre class="diff">' + "\n".join(out) + "</pre>")


CHART_W, CHART_H, CHART_PAD = 640, 120, 24
"""A chart's frame: wide and low, so that the overview's two fit one screen beside the rest."""


def bar_chart(points: Sequence[tuple[str, float]], *, label: str, fmt: str = "{:,.0f}") -> Markup:
    """A bar per point (a day), scaled to the largest, each with its value as a tooltip; an empty
    frame with "no data" when every value is zero."""
    top = max((v for _, v in points), default=0.0)
    inner_w, inner_h = CHART_W - 2 * CHART_PAD, CHART_H - 2 * CHART_PAD
    step = inner_w / max(len(points), 1)
    parts = [
        f'<svg class="chart" viewBox="0 0 {CHART_W} {CHART_H}" role="img" aria-label="{escape(label)}" '
        'xmlns="http://www.w3.org/2000/svg">',
        f'<line class="axis" x1="{CHART_PAD}" y1="{CHART_H - CHART_PAD}" x2="{CHART_W - CHART_PAD}" '
        f'y2="{CHART_H - CHART_PAD}"/>',
        f'<text class="lbl" x="{CHART_PAD}" y="{CHART_PAD - 10}">{escape(label)}: max '
        f"{escape(fmt.format(top))}</text>",
    ]
    if top <= 0:
        parts.append(f'<text class="lbl" x="{CHART_W / 2 - 30}" y="{CHART_H / 2}">no data</text>')
    for i, (day, value) in enumerate(points):
        h = 0.0 if top <= 0 else inner_h * value / top
        x = CHART_PAD + i * step + step * 0.15
        y = CHART_H - CHART_PAD - h
        parts.append(
            f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{step * 0.7:.1f}" height="{h:.1f}">'
            f"<title>{escape(day)}: {escape(fmt.format(value))}</title></rect>"
        )
        if i % 5 == 0 or i == len(points) - 1:
            parts.append(
                f'<text class="tick" x="{x:.1f}" y="{CHART_H - CHART_PAD + 14}">{escape(day[5:])}</text>'
            )
    parts.append("</svg>")
    return Markup("".join(parts))

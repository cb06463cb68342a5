"""The overview counts and links only live scopes (a forgotten or cleared one is neither counted nor
linked), keeps details behind links, and no link of it, nor of any page it leads to, answers 404."""

from __future__ import annotations

import re
from html import unescape
from urllib.parse import unquote, urlsplit

from starlette.testclient import TestClient

from tests.daemon.ui.conftest import Opener
from tests.daemon.ui.support import Prepared

CRAWL_LIMIT = 400


def links(html: str) -> list[str]:
    """The page's own addresses its links lead to (``href`` of every ``<a>``)."""
    out = []
    for href in re.findall(r'<a [^>]*href="([^"]*)"', html):
        href = unescape(href)
        if href.startswith("/") and not href.startswith("//"):
            out.append(href)
    return out


def crawl(client: TestClient, start: str, depth: int) -> dict[str, int]:
    """Every page reachable from ``start`` within ``depth`` clicks, with its status."""
    seen: dict[str, int] = {}
    frontier = [start]
    for level in range(depth + 1):
        following: list[str] = []
        for url in frontier:
            if url in seen or len(seen) >= CRAWL_LIMIT:
                continue
            response = client.get(url)
            seen[url] = response.status_code
            if level < depth and "text/html" in response.headers.get("content-type", ""):
                following += links(response.text)
        frontier = following
    return seen


def test_no_link_of_the_overview_or_of_a_page_it_leads_to_is_a_404(
    fresh: Prepared, open_page: Opener
) -> None:
    context, client = open_page(fresh)
    csrf = context.guard.csrf
    assert client.post("/inbox/accept", data={"csrf": csrf, "run": fresh.accept_run}).status_code == 200
    forgotten = client.post("/forget", data={"csrf": csrf, "session": fresh.forget_session})
    assert forgotten.status_code == 200, forgotten.text
    assert client.get("/memory/scope", params={"scope": fresh.acme}).status_code == 404  # cleared
    seen = crawl(client, "/", depth=4)
    assert len(seen) > 20, seen
    broken = {url: code for url, code in seen.items() if code == 404}
    assert broken == {}
    assert any(urlsplit(u).path == "/memory/topic" for u in seen)  # the crawl got as far as topics
    assert any(urlsplit(u).path == "/sessions/detail" for u in seen)


def test_the_overview_counts_and_links_only_live_scopes(fresh: Prepared, open_page: Opener) -> None:
    context, client = open_page(fresh)
    csrf = context.guard.csrf
    assert client.post("/inbox/accept", data={"csrf": csrf, "run": fresh.accept_run}).status_code == 200
    before = client.get("/").text
    assert re.search(r'id="live-scopes">2 scopes<', before), before
    assert client.post("/forget", data={"csrf": csrf, "session": fresh.forget_session}).status_code == 200
    after = client.get("/").text
    assert re.search(r'id="live-scopes">1 scope<', after)
    for page in ("/", "/publish", "/usage", "/memory"):
        linked = [href for href in links(client.get(page).text) if "scope=" in href]
        assert not [href for href in linked if fresh.acme in unquote(href)], page


def test_the_overview_shows_publish_targets_counted_with_the_rows_behind_a_link(
    shared: Prepared, open_page: Opener
) -> None:
    _, client = open_page(shared)
    overview = client.get("/").text
    [card] = re.findall(r'<div class="card[^"]*" id="publish">.*?</div>', overview, re.S)
    assert "claude_code" in card
    assert 'href="/publish"' in card
    assert "<table" not in card
    targets = client.get("/publish").text
    [table] = re.findall(r'<table id="targets">.*?</table>', targets, re.S)
    assert "claude_code" in table
    assert shared.acme in table


def test_the_overview_lists_every_agent_with_each_target_on_off_or_not_installed(
    shared: Prepared, open_page: Opener
) -> None:
    """Issue 36: the page says, as `memd status` does, what each agent gets and how to change it."""
    from pipeline import roster

    _, client = open_page(shared)
    overview = client.get("/").text
    [card] = re.findall(r'<div class="card" id="agents">.*?</div>', overview, re.S)
    for agent in roster.agents():
        assert f"<b>{agent.label}</b>" in card
    claude = card.split("<b>Claude Code</b>", 1)[1].split("</p>", 1)[0]
    assert 'claude_code: <span class="good">on</span>' in claude  # its root is there: installed
    assert (
        'claude_code_global: <span class="dim">off (set [publish] claude_code_global = true)</span>' in claude
    )

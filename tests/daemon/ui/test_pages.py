"""The page's handlers through starlette's TestClient: each page shows what memd knows, and the
changes do what `memd inbox` and `memd forget` do."""

from __future__ import annotations

import re
from urllib.parse import urlencode

from tests.daemon.ui.conftest import Opener
from tests.daemon.ui.support import Prepared


def test_the_overview_shows_the_daemon_backlog_spend_hit_rates_and_publish_targets(
    shared: Prepared, open_page: Opener
) -> None:
    _, client = open_page(shared)
    html = client.get("/").text
    assert 'id="daemon-state">never started<' in html
    assert "Rate-limit gate" in html
    # The backlog by state, with the reasons of the prepared sessions.
    assert "too few user messages" in html
    assert "API error" in html
    assert 'href="/sessions?state=skipped"' in html
    # The chart: one bar per day, and the fake API's calls counted today.
    assert html.count('<rect class="bar"') == 60
    assert "tokens per day: max 0" not in html
    assert "claude_code" in html  # a publish target, its scopes counted
    assert shared.acme in client.get("/usage").text  # a scope of the hit-rate table


def test_the_memory_pages_show_scopes_topics_with_frontmatter_history_and_diffs(
    shared: Prepared, open_page: Opener
) -> None:
    _, client = open_page(shared)
    listing = client.get("/memory").text
    for scope in (shared.acme,):
        assert scope in listing
    scope = client.get("/memory/scope", params={"scope": shared.acme}).text
    assert "testing.md" in scope
    assert "Run <code>make test</code>." not in scope
    # The index's relative links lead to the page's address for the topic.
    link = urlencode({"scope": shared.acme, "file": "testing.md"}).replace("&", "&amp;")
    assert f'href="/memory/topic?{link}"' in scope
    topic = client.get("/memory/topic", params={"scope": shared.acme, "file": "testing.md"}).text
    assert "Run <code>make test</code>." in topic  # Markdown rendered
    assert 'href="/sessions/detail?session=sess-acme"' in topic  # its source session, linked
    assert re.search(r"<th>created</th><td>\d{4}-\d\d-\d\d</td>", topic)
    history = client.get("/memory/history", params={"scope": shared.acme, "file": "testing.md"}).text
    [diff_link] = re.findall(r'href="(/memory/diff\?[^"]+)"', history)
    diff = client.get(diff_link.replace("&amp;", "&")).text
    assert '<span class="d-add">+Run `make test`.</span>' in diff


def test_search_finds_topic_files_across_scopes(shared: Prepared, open_page: Opener) -> None:
    _, client = open_page(shared)
    found = client.get("/memory/search", params={"q": "MAKE TEST"}).text
    assert "Testing" in found
    assert "1 topic file(s)" in found
    assert "0 topic file(s)" in client.get("/memory/search", params={"q": "no such words"}).text


def test_the_inbox_lists_pending_runs_and_shows_a_runs_diff(shared: Prepared, open_page: Opener) -> None:
    _, client = open_page(shared)
    listing = client.get("/inbox").text
    assert shared.accept_run in listing
    assert shared.reject_run in listing
    run = client.get("/inbox/run", params={"id": shared.accept_run}).text
    assert "+Deploy with `fly deploy`." in run
    assert 'action="/inbox/accept"' in run
    assert 'name="csrf"' in run
    assert client.get("/inbox/run", params={"id": "nope"}).status_code == 409


def test_sessions_are_listed_with_state_and_reason_paged_and_filtered(
    shared: Prepared, open_page: Opener
) -> None:
    _, client = open_page(shared)
    listing = client.get("/sessions").text
    assert "sess-acme" in listing
    assert "too few user messages" in listing
    skipped = client.get("/sessions", params={"state": "skipped"}).text
    assert "too few user messages" in skipped
    assert "API error" not in skipped
    assert client.get("/sessions", params={"state": "bogus"}).status_code == 400
    detail = client.get("/sessions/detail", params={"session": "sess-acme"}).text
    assert shared.acme in detail
    assert 'id="forget-session"' in detail


def test_accepting_and_rejecting_do_what_memd_inbox_does(fresh: Prepared, open_page: Opener) -> None:
    context, client = open_page(fresh)
    csrf = context.guard.csrf
    accepted = client.post("/inbox/accept", data={"csrf": csrf, "run": fresh.accept_run})
    assert accepted.status_code == 200, accepted.text
    assert "accepted: the memory repository is at" in accepted.text
    assert f"published {fresh.accept_scope} to claude_code" in accepted.text
    assert "deploy.md" in client.get("/memory/scope", params={"scope": fresh.accept_scope}).text
    rejected = client.post("/inbox/reject", data={"csrf": csrf, "run": fresh.reject_run})
    assert rejected.status_code == 200, rejected.text
    assert f"rejected {fresh.reject_run} ({fresh.reject_scope})" in rejected.text
    listing = client.get("/inbox").text
    assert "the inbox is empty" in listing
    assert client.get("/memory/scope", params={"scope": fresh.reject_scope}).status_code == 404
    again = client.post("/inbox/accept", data={"csrf": csrf, "run": fresh.accept_run})
    assert again.status_code == 409
    assert "no pending run" in again.text


def test_forgetting_a_session_asks_first_then_does_what_memd_forget_does(
    fresh: Prepared, open_page: Opener
) -> None:
    context, client = open_page(fresh)
    confirm = client.get("/forget", params={"session": fresh.forget_session}).text
    assert "memd forget --session sess-acme" in confirm
    assert 'id="confirm-forget"' in confirm
    assert "testing.md" in client.get("/memory/scope", params={"scope": fresh.acme}).text
    done = client.post("/forget", data={"csrf": context.guard.csrf, "session": fresh.forget_session})
    assert done.status_code == 200, done.text
    assert f"{fresh.acme}: 1 extract(s) forgotten" in done.text
    assert f"{fresh.acme}: cleared" in done.text
    assert "git history" in done.text
    assert "testing.md" not in client.get("/memory/scope", params={"scope": fresh.acme}).text
    detail = client.get("/sessions/detail", params={"session": fresh.forget_session}).text
    assert re.search(
        r"<td class=\"n\">0</td><td>\d{4}-\d\d-\d\d \d\d:\d\d</td>", detail
    )  # none live, forgotten at


def test_forgetting_a_project_confirms_the_scope_and_rejects_a_bad_key(
    fresh: Prepared, open_page: Opener
) -> None:
    context, client = open_page(fresh)
    assert fresh.acme in client.get("/forget", params={"project": fresh.acme}).text
    assert client.get("/forget", params={"project": "../etc"}).status_code == 400
    assert client.get("/forget").status_code == 400
    bad = client.post("/forget", data={"csrf": context.guard.csrf, "project": "../etc"})
    assert bad.status_code == 403
    done = client.post("/forget", data={"csrf": context.guard.csrf, "project": fresh.reject_scope})
    assert f"dropped pending review {fresh.reject_run}" in done.text


def test_a_topic_published_marked_stale_says_so_on_its_page(shared: Prepared, open_page: Opener) -> None:
    import asyncio

    from daemon.runtime import open_store_here
    from pipeline.clock import SystemClock
    from pipeline.store.cites import save

    async def mark(stale: dict[str, dict[str, str]]) -> None:
        store = await open_store_here(shared.settings)
        try:
            await save(store, {}, stale, now=SystemClock().now())
        finally:
            await store.close()

    _, client = open_page(shared)
    params = {"scope": shared.acme, "file": "testing.md"}
    assert 'id="topic-stale"' not in client.get("/memory/topic", params=params).text
    asyncio.run(mark({f"{shared.acme}/testing.md": {"reason": "Makefile changed (lines 3-4)", "since": "x"}}))
    try:
        page = client.get("/memory/topic", params=params).text
        assert "stale: Makefile changed (lines 3-4)" in page
    finally:
        asyncio.run(mark({}))


def test_forgetting_a_project_by_its_short_name(fresh: Prepared, open_page: Opener) -> None:
    context, client = open_page(fresh)
    short = fresh.acme.removeprefix("projects/").rsplit("-", 1)[0]
    assert short == "acme"
    confirm = client.get("/forget", params={"project": short})
    assert confirm.status_code == 200, confirm.text
    assert fresh.acme in confirm.text
    assert fresh.folders[fresh.acme] in confirm.text
    done = client.post("/forget", data={"csrf": context.guard.csrf, "project": short})
    assert done.status_code == 200, done.text
    assert f"{fresh.acme}: 1 extract(s) forgotten" in done.text
    assert "testing.md" not in client.get("/memory/scope", params={"scope": fresh.acme}).text

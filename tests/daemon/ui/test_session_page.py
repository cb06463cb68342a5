"""A session's page says what memd sent about it: its extract (summary, notes and candidate memories,
as phase 1 stored them), what the redactor replaced in it (counts by rule, never a value), and the
topic files whose ``sources`` cite it, each by its id."""

from __future__ import annotations

import re
from urllib.parse import urlencode

from tests.daemon.ui.conftest import Opener
from tests.daemon.ui.support import SENT_MEMORY, Prepared


def test_a_session_page_shows_the_extract_memd_sent(shared: Prepared, open_page: Opener) -> None:
    _, client = open_page(shared)
    html = client.get("/sessions/detail", params={"session": "sess-acme"}).text
    [sent] = re.findall(r'<section id="extract-\d+".*?</section>', html, re.S)
    assert "The user fixed the flaky login test." in sent  # the summary
    assert "tests run with <code>make test</code>" in sent  # the notes, as Markdown
    assert SENT_MEMORY["name"] in sent  # a candidate memory, with its body and why
    assert SENT_MEMORY["body"] in sent
    assert "the CI is slow" in sent
    assert shared.acme in sent


def test_a_session_page_counts_what_the_redactor_replaced_by_rule(
    shared: Prepared, open_page: Opener
) -> None:
    _, client = open_page(shared)
    html = client.get("/sessions/detail", params={"session": "sess-acme"}).text
    [table] = re.findall(r'<table id="redactions">.*?</table>', html, re.S)
    rows = re.findall(r"<tr><td>([^<]+)</td><td class=\"n\">(\d+)</td><td class=\"n\">(\d+)</td></tr>", table)
    assert rows == [("aws-access-key", "1", "0"), ("github-token", "2", "1")]
    assert "3 value(s) replaced before memd sent the session" in html
    # A session with nothing replaced says so.
    clean = client.get("/sessions/detail", params={"session": "sess-beta"}).text
    assert "the redactor replaced nothing" in clean


def test_a_session_page_lists_the_topics_citing_it_by_id(shared: Prepared, open_page: Opener) -> None:
    _, client = open_page(shared)
    html = client.get("/sessions/detail", params={"session": "sess-acme"}).text
    [cited] = re.findall(r'<table id="citing">.*?</table>', html, re.S)
    link = urlencode({"scope": shared.acme, "file": "testing.md"}).replace("&", "&amp;")
    assert f'href="/memory/topic?{link}">{shared.acme}/testing.md</a>' in cited
    assert "hostile.md" not in cited  # it cites no session
    none = client.get("/sessions/detail", params={"session": "extra-1"}).text
    assert "no topic file cites this session" in none

"""Scopes are shown with their project folder, and every topic listed with its id ``<scope>/<file>``."""

from __future__ import annotations

import re

from tests.daemon.ui.conftest import Opener
from tests.daemon.ui.support import Prepared


def test_the_memory_page_and_a_scope_show_the_project_folder(shared: Prepared, open_page: Opener) -> None:
    _, client = open_page(shared)
    folder = shared.folders[shared.acme]
    listing = client.get("/memory").text
    [row] = [r for r in re.findall(r"<tr>.*?</tr>", listing, re.S) if shared.acme in r]
    assert folder in row
    assert "acme" in row  # the short name
    scope = client.get("/memory/scope", params={"scope": shared.acme}).text
    assert folder in scope


def test_every_topic_listed_shows_its_id(shared: Prepared, open_page: Opener) -> None:
    _, client = open_page(shared)
    testing = f"{shared.acme}/testing.md"
    scope = client.get("/memory/scope", params={"scope": shared.acme}).text
    [topics] = re.findall(r'<table id="topics">.*?</table>', scope, re.S)
    assert f">{testing}</a>" in topics
    assert f">{shared.acme}/hostile.md</a>" in topics
    topic = client.get("/memory/topic", params={"scope": shared.acme, "file": "testing.md"}).text
    assert f'<p class="id mono" id="topic-id">{testing}</p>' in topic
    assert shared.folders[shared.acme] in topic
    found = client.get("/memory/search", params={"q": "make test"}).text
    assert f">{testing}</a>" in found


def test_the_inbox_and_sessions_show_scopes_with_their_folder(shared: Prepared, open_page: Opener) -> None:
    _, client = open_page(shared)
    beta = [s for s in shared.folders if s not in (shared.acme,) and "beta" in s][0]
    inbox = client.get("/inbox").text
    [row] = [r for r in re.findall(r"<tr>.*?</tr>", inbox, re.S) if shared.accept_run in r]
    assert shared.folders[beta] in row
    run = client.get("/inbox/run", params={"id": shared.accept_run}).text
    assert shared.folders[beta] in run
    session = client.get("/sessions/detail", params={"session": "sess-acme"}).text
    [extracts] = re.findall(r'<table id="extracts">.*?</table>', session, re.S)
    assert shared.folders[shared.acme] in extracts


def test_forgetting_a_project_names_its_folder_before_it_asks(shared: Prepared, open_page: Opener) -> None:
    _, client = open_page(shared)
    confirm = client.get("/forget", params={"project": shared.acme}).text
    assert shared.folders[shared.acme] in confirm

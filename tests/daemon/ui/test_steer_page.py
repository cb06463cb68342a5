"""A topic's page edits, pins and forgets that one memory (``daemon.steer``, what `memd memories
edit|pin|forget` do): POST forms with the page's CSRF token, forget after a confirmation; each lands
as one commit in the memory repository."""

from __future__ import annotations

import asyncio
import re

from pipeline.gitrepo.repository import MemoryRepo
from pipeline.layout import PLACEHOLDER_SUMMARY
from tests.daemon.ui.conftest import Opener
from tests.daemon.ui.support import Prepared


def topic_file(prepared: Prepared, file: str = "testing.md") -> str:
    path = prepared.settings.paths.memory_dir.joinpath(*prepared.acme.split("/"), file)
    return path.read_text() if path.exists() else ""


def last_commit(prepared: Prepared) -> str:
    repo = MemoryRepo(prepared.settings.paths.memory_dir)
    return asyncio.run(repo.git("log", "-1", "--format=%B")).strip()


def test_a_topic_page_offers_edit_pin_and_forget_unless_read_only(fresh: Prepared, open_page: Opener) -> None:
    _, client = open_page(fresh)
    at = {"scope": fresh.acme, "file": "testing.md"}
    html = client.get("/memory/topic", params=at).text
    assert 'id="edit"' in html
    assert 'action="/memory/pin"' in html
    assert 'id="forget-memory"' in html
    edit = client.get("/memory/edit", params=at).text
    assert "Run `make test`." in edit  # the body, in the form
    assert 'name="csrf"' in edit
    confirm = client.get("/memory/forget", params=at).text
    assert f"memd memories forget {fresh.acme}/testing.md" in confirm
    assert client.get("/memory/edit", params={**at, "file": "nope.md"}).status_code == 404
    _, reader = open_page(fresh, read_only=True)
    shown = reader.get("/memory/topic", params=at).text
    assert 'id="edit"' not in shown
    assert 'action="/memory/pin"' not in shown


def test_editing_from_the_page_commits_the_persons_text(fresh: Prepared, open_page: Opener) -> None:
    context, client = open_page(fresh)
    at = {"scope": fresh.acme, "file": "testing.md"}
    refused = client.post("/memory/edit", data={**at, "body": "Run `make check`.\n"})
    assert refused.status_code == 403  # no CSRF token: nothing changes
    assert "make check" not in topic_file(fresh)
    done = client.post("/memory/edit", data={**at, "csrf": context.guard.csrf, "body": "Run `make check`.\n"})
    assert done.status_code == 200, done.text
    assert re.search(rf"{re.escape(fresh.acme)}/testing.md: edited \([0-9a-f]{{12}}\)", done.text)
    text = topic_file(fresh)
    assert "Run `make check`." in text
    assert "Run `make test`." not in text
    assert re.search(r"^edited: \d{4}-\d\d-\d\d$", text, re.M)
    assert "Memd-Action: edit" in last_commit(fresh)
    shown = client.get("/memory/topic", params=at).text
    assert "Run <code>make check</code>." in shown
    assert 'id="edited"' in shown


def test_pinning_and_unpinning_from_the_page(fresh: Prepared, open_page: Opener) -> None:
    context, client = open_page(fresh)
    at = {"scope": fresh.acme, "file": "testing.md", "csrf": context.guard.csrf}
    pinned = client.post("/memory/pin", data={**at, "pinned": "true"})
    assert pinned.status_code == 200, pinned.text
    assert "pinned: true" in topic_file(fresh)
    shown = client.get("/memory/topic", params={"scope": fresh.acme, "file": "testing.md"}).text
    assert ">Unpin</button>" in shown
    assert 'id="pinned"' in shown
    again = client.post("/memory/pin", data={**at, "pinned": "true"})
    assert "nothing to change (already pinned)" in again.text
    client.post("/memory/pin", data={**at, "pinned": "false"})
    assert "pinned: true" not in topic_file(fresh)


def test_forgetting_one_memory_from_the_page(fresh: Prepared, open_page: Opener) -> None:
    context, client = open_page(fresh)
    at = {"scope": fresh.acme, "file": "testing.md"}
    done = client.post("/memory/forget", data={**at, "csrf": context.guard.csrf})
    assert done.status_code == 200, done.text
    assert f"{fresh.acme}/testing.md: forgotten" in done.text
    assert topic_file(fresh) == ""
    # The page's forget is `memd memories forget`: the digest, written from every topic, is the
    # placeholder on the head and in the published copy, until a run with a model writes it again.
    assert topic_file(fresh, "memory_summary.md") == PLACEHOLDER_SUMMARY.decode()
    [copy] = list(fresh.config.parent.glob("home/.claude/projects/*acme/memory/MEMORY.md"))
    assert "The user works on acme." not in copy.read_text()
    assert "memd is rebuilding this digest" in copy.read_text()
    assert (
        f"{fresh.acme}/memory_summary.md, the digest written from every topic, is a placeholder" in done.text
    )
    assert "Memd-Action: forget" in last_commit(fresh)
    assert client.get("/memory/topic", params=at).status_code == 404
    assert "testing.md" not in client.get("/memory/scope", params={"scope": fresh.acme}).text
    gone = client.post("/memory/forget", data={**at, "csrf": context.guard.csrf})
    assert gone.status_code == 409


def test_a_forget_from_the_page_whose_copy_cannot_be_written_says_not_finished(
    fresh: Prepared, open_page: Opener
) -> None:
    [index] = list(fresh.config.parent.glob("home/.claude/projects/*acme/memory/MEMORY.md"))
    elsewhere = index.parent.parent / "elsewhere.md"
    elsewhere.write_text(index.read_text())
    index.unlink()
    index.symlink_to(elsewhere)  # memd writes no file through a link it did not make
    context, client = open_page(fresh)
    at = {"scope": fresh.acme, "file": "testing.md"}
    done = client.post("/memory/forget", data={**at, "csrf": context.guard.csrf})
    assert done.status_code == 500, done.text
    title = re.search(r'<h1 class="bad" id="result">([^<]*)</h1>', done.text)
    assert title is not None
    assert title.group(1) != "forgotten"
    summary = done.text.split('id="summary"')[1].split("</ul>")[0]
    assert (
        f"NOT finished: the published copy at {index.parent} still holds {fresh.acme}/testing.md" in summary
    )
    assert f"{fresh.acme}/testing.md: forgotten" not in done.text

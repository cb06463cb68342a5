"""What accept, reject and forget answer is a short summary with the counts (every line behind a
``<details>``), and an inbox run's page shows the topic changes first, the raw phase-1 inputs after."""

from __future__ import annotations

import re

from tests.daemon.ui.conftest import Opener
from tests.daemon.ui.support import Prepared

SUMMARY_LINES = 6


def summary(html: str) -> list[str]:
    [part] = re.findall(r'<ul id="summary">(.*?)</ul>', html, re.S)
    return [re.sub(r"<[^>]+>", "", li).strip() for li in re.findall(r"<li>(.*?)</li>", part, re.S)]


def details(html: str) -> str:
    [part] = re.findall(r'<details id="details">(.*?)</details>', html, re.S)
    return part


def test_accept_reject_and_forget_answer_with_a_short_summary(fresh: Prepared, open_page: Opener) -> None:
    context, client = open_page(fresh)
    csrf = context.guard.csrf
    accepted = client.post("/inbox/accept", data={"csrf": csrf, "run": fresh.accept_run}).text
    lines = summary(accepted)
    assert len(lines) <= SUMMARY_LINES, lines
    assert lines[0].startswith("accepted: the memory repository is at")
    [published] = [line for line in lines if line.startswith("published copies:")]
    assert re.fullmatch(r"published copies: \d+ written, \d+ current, \d+ skipped, 0 failed", published)
    assert not any(line.startswith("published ") and " to " in line for line in lines)
    assert f"published {fresh.accept_scope} to claude_code" in details(accepted)
    assert "skipped" in details(accepted)

    rejected = client.post("/inbox/reject", data={"csrf": csrf, "run": fresh.reject_run}).text
    assert summary(rejected) == [
        f"rejected {fresh.reject_run} ({fresh.reject_scope}): its branch is deleted; the memory and its published copies stay as they were"
    ]

    forgotten = client.post("/forget", data={"csrf": csrf, "session": fresh.forget_session}).text
    lines = summary(forgotten)
    assert len(lines) <= SUMMARY_LINES, lines
    assert f"{fresh.acme}: 1 extract(s) forgotten" in lines
    assert any(line.startswith("published copies:") for line in lines)
    assert "git history" in details(forgotten)
    again = client.post("/forget", data={"csrf": csrf, "session": fresh.forget_session}).text
    [nothing] = summary(again)
    assert nothing.startswith("nothing to forget")


def test_an_inbox_run_shows_the_topic_changes_before_the_phase1_inputs(
    shared: Prepared, open_page: Opener
) -> None:
    _, client = open_page(shared)
    run = client.get("/inbox/run", params={"id": shared.accept_run}).text
    topics = run.index("+Deploy with `fly deploy`.")
    [inputs] = re.findall(r'<details id="inputs">.*?</details>', run, re.S)
    assert "rollout_summaries/" in inputs or "raw_memories.md" in inputs
    assert run.index('<details id="inputs">') > topics
    assert "deploy.md" not in inputs

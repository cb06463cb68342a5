"""What a sync says about its remote: never a credential from any part of the URL (printed, in
`--json`, in the state store), and a remote branch that is not a commit named as such. Real git,
one machine, in process."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import asdict
from pathlib import Path

import pytest

from pipeline.clock import FakeClock
from pipeline.store import kv
from pipeline.store.read.keys import SYNC_STATE_KEY, machine_key
from pipeline.sync.state import SyncState, scrub
from pipeline.sync.urls import scrubbed, shown_url
from pipeline.vocabulary import SyncOutcome
from tests.fakes.anthropic_api import FakeAnthropicAPI
from tests.pipeline.sync.support import (
    Machine,
    bare_remote,
    close,
    git,
    machine,
    refused_because,
    synced_once,
)

PASSWORD = "pw-Secret-1234"
TOKEN = "glpat-Token-5678"
FRAGMENT = "frag-Secret-9012"


@pytest.fixture
async def lone(tmp_path: Path, fake_api: FakeAnthropicAPI, clock: FakeClock) -> AsyncIterator[Machine]:
    """One machine whose remote is an https URL with a password, a token in the query and a
    fragment, at a loopback port where nothing listens (the fetch fails at once)."""
    url = f"https://me:{PASSWORD}@127.0.0.1:9/memory.git?private_token={TOKEN}#{FRAGMENT}"
    m = await machine("a", tmp_path, fake_api, url, clock)
    try:
        yield m
    finally:
        await close(m)


async def test_no_part_of_a_remote_credential_is_shown_or_stored(lone: Machine) -> None:
    report = await lone.sync()
    assert report.outcome == SyncOutcome.FAILED
    stored = await kv.get(lone.store, machine_key(SYNC_STATE_KEY, lone.store.machine), None)
    shown = "\n".join([*report.lines(), json.dumps(asdict(report), default=str), json.dumps(stored)])
    assert "127.0.0.1:9/memory.git" in shown  # the remote is still named
    assert report.remote == "https://127.0.0.1:9/memory.git?***"
    for secret in (PASSWORD, TOKEN, FRAGMENT, "me:"):
        assert secret not in shown


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://me:pw@github.com/me/memory", "https://github.com/me/memory"),
        ("https://ghp_tok@github.com/me/memory", "https://github.com/me/memory"),
        ("https://me:p@ss@host/m.git", "https://host/m.git"),
        ("https://host/m.git?private_token=x&y=1", "https://host/m.git?***"),
        ("https://host/m.git#secret", "https://host/m.git#***"),
        ("ssh://git@host:22/m.git", "ssh://host:22/m.git"),
        ("git@github.com:me/memory.git", "git@github.com:me/memory.git"),
        ("me:secret@host:memory.git", "me@host:memory.git"),
        ("/srv/memory.git", "/srv/memory.git"),
        ("file:///srv/memory.git", "file:///srv/memory.git"),
    ],
)
def test_a_shown_url_keeps_host_and_path_only(url: str, shown: str) -> None:
    assert shown_url(url) == shown


def test_a_message_quoting_the_remote_in_another_form_is_scrubbed() -> None:
    url = f"https://me:{PASSWORD}@host/m.git?private_token={TOKEN}"
    message = (
        f"fatal: unable to access 'https://host/m.git/?private_token={TOKEN}': 401; "
        f"remote said {PASSWORD} and {TOKEN}"
    )
    text = scrubbed(message, url)
    assert PASSWORD not in text
    assert TOKEN not in text
    assert "'https://host/m.git/?***'" in text


async def test_a_remote_branch_that_is_not_a_commit_is_refused_as_such(
    tmp_path: Path, fake_api: FakeAnthropicAPI, clock: FakeClock
) -> None:
    remote = bare_remote(tmp_path)
    (tmp_path / "note").write_text("not a commit\n")
    blob = git(remote, "hash-object", "-w", str(tmp_path / "note")).strip()
    (remote / "refs" / "heads" / "main").write_text(blob + "\n")  # git's own commands refuse to do this
    _, report = await synced_once(tmp_path, fake_api, str(remote), clock)
    reason = refused_because(report, SyncOutcome.STOPPED)
    assert "is not a commit" in reason
    assert "overtaken" not in reason
    assert report.attempts == 1
    assert git(remote, "rev-parse", "refs/heads/main").strip() == blob  # nothing was pushed over it


def test_a_state_recorded_with_a_credential_is_scrubbed_when_a_sync_loads_it() -> None:
    # A state written before memd hid every part (an older memd, a token in the query) keeps its
    # last error until the next failure: the sync scrubs what it loads, so a success does too.
    url = f"https://me:{PASSWORD}@host/m.git?private_token={TOKEN}"
    old = SyncState(remote=f"https://host/m.git?private_token={TOKEN}", last_error=f"{TOKEN} refused")
    text = json.dumps(asdict(scrub(old, url)))
    assert TOKEN not in text
    assert "https://host/m.git?***" in text

"""``[sync]``: any git URL memd can reach, never an option or a transport that runs a program."""

from __future__ import annotations

import pytest

from pipeline.settings import SettingsError as ValidationError
from pipeline.settings import SyncSettings
from pipeline.sync.urls import shown_url


@pytest.mark.parametrize(
    "url",
    ["/srv/memory.git", "file:///srv/memory.git", "git@github.com:me/memory.git", "ssh://h/m", "https://h/m"],
)
def test_any_git_url_is_a_remote(url: str) -> None:
    sync = SyncSettings(remote=url)
    assert sync.enabled
    assert sync.remote == url


@pytest.mark.parametrize("url", ["ext::sh -c x", "fd::3", "--upload-pack=touch x", "a\nb"])
def test_a_url_that_could_run_a_program_is_refused(url: str) -> None:
    with pytest.raises(ValidationError):
        SyncSettings(remote=url)


def test_no_remote_is_no_sync() -> None:
    assert not SyncSettings().enabled
    assert SyncSettings().branch == "main"
    with pytest.raises(ValidationError):
        SyncSettings(branch="-x")
    with pytest.raises(ValidationError):
        SyncSettings(interval_minutes=0)


def test_a_shown_url_never_carries_a_password() -> None:
    assert shown_url("https://me:ghp_secret@github.com/me/memory") == "https://github.com/me/memory"
    assert shown_url("git@github.com:me/memory.git") == "git@github.com:me/memory.git"

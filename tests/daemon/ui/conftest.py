"""Fixtures of the page's tests: a prepared installation, and the page over it through starlette's TestClient."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from daemon.config import load_settings
from daemon.ui.app import create_app
from daemon.ui.context import UIContext
from daemon.ui.security import Guard, load_or_create_token
from pipeline.clock import SystemClock
from tests.daemon.cli.test_inbox import ENV
from tests.daemon.ui.support import Prepared, prepare
from tests.fakes.anthropic_api import FakeAnthropicAPI, FakeResponse, Responder, ScriptedResponder

PORT = 8399
ADDRESS = f"http://127.0.0.1:{PORT}"


def page_app(prepared: Prepared, *, read_only: bool = False, port: int = PORT) -> tuple[UIContext, object]:
    settings = prepared.settings
    guard = Guard(load_or_create_token(settings.paths.state_dir), "127.0.0.1", port, read_only)
    context = UIContext(
        settings=lambda: settings,
        store=None,
        guard=guard,
        clock=SystemClock(),
        config_path=prepared.config,
        config_exists=True,
        env=ENV,
    )
    return context, create_app(context)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prepared]:
    """One prepared installation for the tests that only read."""
    api = FakeAnthropicAPI().start()
    try:
        yield prepare(tmp_path_factory.mktemp("ui"), api)
    finally:
        api.stop()


@pytest.fixture
def prepared_here(tmp_path: Path, fake_api: FakeAnthropicAPI) -> Prepared:
    """An installation prepared under this test's ``tmp_path`` (its home, ``tmp_path/home``, is the
    prepared one), for the tests that run memd as a whole process there."""
    return prepare(tmp_path, fake_api)


@dataclass(frozen=True)
class Template:
    """One installation prepared for a worker's whole session, and a copy of it as it was left."""

    where: Path
    kept: Path
    prepared: Prepared
    base_url: str
    script: list[FakeResponse | Responder]
    """What the prepared Messages API had left to answer (its last scripted run's turns)."""


@pytest.fixture(scope="session")
def _template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    root = tmp_path_factory.mktemp("ui-fresh")
    where = root / "installation"
    where.mkdir()
    api = FakeAnthropicAPI().start()
    try:
        prepared = prepare(where, api)
        left = api.responder
    finally:
        api.stop()
    assert isinstance(left, ScriptedResponder), left
    kept = root / "kept"
    shutil.copytree(where, kept, symlinks=True)
    return Template(where, kept, prepared, api.base_url, list(left.script))


@pytest.fixture
def fresh(_template: Template, fake_api: FakeAnthropicAPI) -> Prepared:
    """A prepared installation of this test's own, for the tests that change it: the worker's one
    prepared installation (``support.prepare``, ~1 s of CPU) put back as it was left, at the same
    place (every path, scope and commit as prepared), its model calls answered by this test's fake
    Messages API with what the prepared one had left to answer."""
    shutil.rmtree(_template.where)
    shutil.copytree(_template.kept, _template.where, symlinks=True)
    config = _template.prepared.config
    text = config.read_text()
    assert text.count(_template.base_url) == 1, text
    config.write_text(text.replace(_template.base_url, fake_api.base_url))
    fake_api.responder = ScriptedResponder(list(_template.script))
    return replace(_template.prepared, settings=load_settings(config).settings)


Opener = Callable[..., tuple[UIContext, TestClient]]


@pytest.fixture
def open_page() -> Iterator[Opener]:
    """``open_page(prepared, read_only=False, login=True)``: a TestClient at the page's own address,
    logged in by the token in the address (as a browser is) unless ``login=False``."""
    clients: list[TestClient] = []

    def opener(
        prepared: Prepared, *, read_only: bool = False, login: bool = True
    ) -> tuple[UIContext, TestClient]:
        context, app = page_app(prepared, read_only=read_only)
        client = TestClient(app, base_url=ADDRESS)  # type: ignore[arg-type]
        client.__enter__()
        clients.append(client)
        if login:
            response = client.get(f"/?token={context.guard.token}")
            assert response.status_code == 200, response.text
        return context, client

    yield opener
    for client in clients:
        client.__exit__(None, None, None)

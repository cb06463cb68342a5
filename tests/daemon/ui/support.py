"""A prepared installation for the page's tests (not a test module): a real store and memory repository.

``prepare`` makes, through memd's own code and the fake Messages API: one accepted consolidation
(project ``acme``: a topic file with history, published), two runs waiting in the inbox (``beta``
to accept, ``gamma`` to reject), a hostile topic file in ``acme`` that holds ``<script>``, and a
few more sessions in other states. The extract of ``sess-acme`` holds candidate memories and the
redaction counts phase 1 records (``pipeline.extract.item``: by rule, before the request and in the
answer; never a value).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from click.testing import CliRunner
from sqlalchemy import insert, update

from daemon.cli import cli
from daemon.config import load_settings
from pipeline.gitrepo.repository import MemoryRepo
from pipeline.machine import machine_id
from pipeline.projects import scope_for
from pipeline.settings import Settings
from pipeline.store import open_store
from pipeline.store.schema import stage1_outputs, transcripts
from tests.daemon.cli.test_inbox import ENV, config_for, project_of, propose
from tests.fakes.anthropic_api import FakeAnthropicAPI, ScriptedResponder
from tests.pipeline.consolidate.support import topic, write_memory

HOSTILE = '<script>alert("owned")</script>'
HOSTILE_TOPIC = (
    "---\nname: Evil <script>alert(1)</script>\ndescription: hostile <b>bold</b>\ntype: project\n---\n"
    f"# Danger\n\n{HOSTILE}\n\n<img src=x onerror=alert(2)>\n\n[click](javascript:alert(3))\n\n"
    "[away](//evil.example/a) [away](HTTPS://evil.example/b) [away](&#47;&#47;evil.example/c) "
    "[away][far] <http://evil.example/d> ![pixel](https://evil.example/p.png) ![pixel](//evil.example/q.png) "
    "![pixel](data:image/png;base64,iVBORw0KGgo=) [near](testing.md)\n\n[far]: //evil.example/e\n"
)


@dataclass(frozen=True)
class Prepared:
    config: Path
    settings: Settings
    acme: str
    """The scope with the accepted memory (and the hostile topic file)."""
    accept_run: str
    accept_scope: str
    reject_run: str
    reject_scope: str
    forget_session: str
    folders: dict[str, str]
    """Each prepared scope's project folder."""


SENT_REDACTIONS = {"input": {"github-token": 2, "aws-access-key": 1}, "output": {"github-token": 1}}
"""What the redactor replaced in ``sess-acme``, by rule, as phase 1 records it."""
SENT_MEMORY = {
    "type": "project",
    "name": "Tests before a push",
    "description": "make test runs the suite",
    "body": "Run make test before every push.",
    "why": "the CI is slow",
    "how_to_apply": "",
    "dates": [],
    "evidence": "user",
    "evidence_claimed": "user",
    "evidence_quote": "",
}


def prepare(tmp_path: Path, fake_api: FakeAnthropicAPI, *, extra_sessions: int = 5) -> Prepared:
    config = config_for(tmp_path, fake_api.base_url)
    for name in ("beta", "gamma"):
        (tmp_path / name).mkdir()
    fake_api.responder = ScriptedResponder(write_memory())
    first = propose(tmp_path, config, "sess-acme")
    accepted = CliRunner().invoke(cli, ["--config", str(config), "inbox", "accept", first], env=ENV)
    assert accepted.exit_code == 0, accepted.output
    fake_api.responder = ScriptedResponder(
        write_memory({"deploy.md": topic("Deploy", "Deploy with `fly deploy`.")})
    )
    beta = propose(tmp_path, config, "sess-beta", project=str(tmp_path / "beta"))
    fake_api.responder = ScriptedResponder(write_memory({"style.md": topic("Style", "Tabs, never spaces.")}))
    gamma = propose(tmp_path, config, "sess-gamma", project=str(tmp_path / "gamma"))
    settings = load_settings(config).settings
    acme = scope_for(project_of(tmp_path))
    folder = settings.paths.memory_dir.joinpath(*acme.split("/"))
    (folder / "hostile.md").write_text(HOSTILE_TOPIC)
    asyncio.run(_commit(MemoryRepo(settings.paths.memory_dir), f"{acme}/hostile.md"))
    asyncio.run(_more_sessions(settings, extra_sessions))
    asyncio.run(_extract_details(settings, "sess-acme"))
    return Prepared(
        config=config,
        settings=settings,
        acme=acme,
        accept_run=beta,
        accept_scope=scope_for(str(tmp_path / "beta")),
        reject_run=gamma,
        reject_scope=scope_for(str(tmp_path / "gamma")),
        forget_session="sess-acme",
        folders={
            acme: project_of(tmp_path),
            scope_for(str(tmp_path / "beta")): str(tmp_path / "beta"),
            scope_for(str(tmp_path / "gamma")): str(tmp_path / "gamma"),
        },
    )


async def _commit(repo: MemoryRepo, path: str) -> None:
    """A file someone else committed to the memory repository (memd commits only what it wrote)."""
    await repo.git("add", "--", path)
    await repo.git("commit", "-q", "-m", f"someone else: {path}")


async def _more_sessions(settings: Settings, n: int) -> None:
    store = await open_store(settings.paths.state_db, machine=machine_id(settings.paths.state_dir))
    now = datetime.now(UTC)
    states = [("active", "idle for 1h of 6h"), ("skipped", "too few user messages"), ("failed", "API error")]
    try:
        async with store.write() as conn:
            for i in range(n):
                state, reason = states[i % len(states)]
                await conn.execute(
                    insert(transcripts).values(
                        machine=store.machine,
                        source="codex",
                        path=f"/t/extra-{i}.jsonl",
                        session_id=f"extra-{i}",
                        project="/work/other",
                        first_seen_at=now,
                        updated_at=now,
                        last_activity=now - timedelta(minutes=i),
                        state=state,
                        reason=reason,
                    )
                )
    finally:
        await store.close()


async def _extract_details(settings: Settings, session: str) -> None:
    store = await open_store(settings.paths.state_db, machine=machine_id(settings.paths.state_dir))
    try:
        async with store.write() as conn:
            await conn.execute(
                update(stage1_outputs)
                .where(stage1_outputs.c.session_id == session)
                .values(redactions=SENT_REDACTIONS, memories=[SENT_MEMORY])
            )
    finally:
        await store.close()

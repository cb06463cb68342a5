"""The memory as the tools see it: the session's scope, scope choices, ids, superseded topics."""

from __future__ import annotations

import subprocess
from datetime import timedelta
from pathlib import Path

from daemon.mcp.memory import Memory
from pipeline.clock import FakeClock
from pipeline.projects import resolve_project, scope_for

TOPIC = "---\nname: {name}\ndescription: {name}\nupdated: {updated}\n{extra}---\n{body}\n"


def test_scopes_ids_and_what_is_never_handed_out(tmp_path: Path) -> None:
    project = tmp_path / "app"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "sub").mkdir()
    own = scope_for(resolve_project(str(project)))
    memory = tmp_path / "memory"
    (memory / own).mkdir(parents=True)
    (memory / "global").mkdir()
    (memory / own / "release.md").write_text(
        TOPIC.format(name="Release steps", updated="2026-10-01", extra="", body="Tag then make release.")
    )
    (memory / "global" / "release.md").write_text(
        TOPIC.format(name="Release habits", updated="2026-10-01", extra="", body="Release on Tuesdays.")
    )
    (memory / "global" / "rota.md").write_text(
        TOPIC.format(
            name="Release rota", updated="2026-01-01", extra="expires: 2026-11-10\n", body="Ann releases."
        )
    )
    clock = FakeClock()
    mem = Memory(memory, project / "sub", clock)
    assert mem.session().scope == own
    assert [h.topic.id for h in mem.search("release", "all", 5, {})][:2] == [
        f"{own}/release.md",
        "global/release.md",
    ]
    assert [h.topic.id for h in mem.search("release", "project", 5, {})] == [f"{own}/release.md"]
    assert "global/rota.md" in [h.topic.id for h in mem.search("release rota", "global", 5, {})]
    clock.advance(timedelta(days=30))  # the rota expired: the index is built again for the new day
    assert [h.topic.id for h in mem.search("release", "global", 5, {})] == ["global/release.md"]
    got = {
        raw: (topic is not None, why)
        for raw, topic, why in mem.get([f"{own}/release.md", "global/rota.md", "global/x.md", "nonsense"])
    }
    assert got[f"{own}/release.md"] == (True, "")
    assert got["global/rota.md"][0] is False
    assert "out of date" in got["global/rota.md"][1]
    assert got["global/x.md"] == (False, "no memory global/x.md")
    assert got["nonsense"][0] is False

"""Forget records (``forgotten/<hash>``): what they hold, and the readers that honour them."""

from __future__ import annotations

from pathlib import Path

from pipeline.memory import forget_records
from pipeline.memory.likeness import ForgottenTopic, shingles
from pipeline.publish.memfiles import read_scope
from pipeline.search.corpus import Corpus

SCOPE = "projects/app-1a2b3c4d"
TEXT = "Deploy the billing service with the orange lever script every Friday at noon"


def _topic(name: str, body: str) -> str:
    return f"---\nname: {name}\ndescription: {name} for agents\ntype: project\n---\n{body}\n"


def _record() -> ForgottenTopic:
    return ForgottenTopic(
        SCOPE, "deploy.md", "Deploy", "how to deploy", shingles(TEXT), "2026-12-07T10:00:00"
    )


def test_a_record_holds_no_text_name_or_description_and_reads_back() -> None:
    data = forget_records.record_bytes(_record())
    assert b"Deploy" not in data
    assert b"billing" not in data
    assert b"how to deploy" not in data
    back = forget_records.parse(data)
    assert back is not None
    assert (back.scope, back.file, back.shingles) == (SCOPE, "deploy.md", shingles(TEXT))
    assert forget_records.is_record_path(forget_records.path_of(data))
    assert forget_records.parse(b"{not json") is None
    assert forget_records.parse(b'{"scope": "x", "file": "y", "shingles": "no"}') is None


def test_input_lines_holding_the_forgotten_text_go_and_the_rest_stays() -> None:
    text = f"- {TEXT}\n- tests run with make check\nagent: claude\n"
    assert forget_records.scrub_text(text, [_record()]) == "- tests run with make check\nagent: claude\n"


def test_publishing_and_memd_mcp_never_read_a_topic_a_record_names(tmp_path: Path) -> None:
    folder = tmp_path.joinpath(*SCOPE.split("/"))
    folder.mkdir(parents=True)
    (folder / "deploy.md").write_text(_topic("Deploy", TEXT))  # put back by hand, or by a tool
    (folder / "renamed.md").write_text(_topic("Other", f"{TEXT}, as agreed"))
    (folder / "testing.md").write_text(_topic("Testing", "Run make check before a push."))
    shown = {t.file for t in read_scope(tmp_path, SCOPE).topics}
    assert shown == {"deploy.md", "renamed.md", "testing.md"}  # no record yet: all are read

    forget_records.write(tmp_path, _record())
    assert {t.file for t in read_scope(tmp_path, SCOPE).topics} == {"testing.md"}
    corpus = Corpus(tmp_path)
    assert {t.file for t in corpus.topics()} == {"testing.md"}
    assert corpus.read(SCOPE, "deploy.md") is None

"""What the page shows for review hides nothing (issue 32, F4): an invisible character left in a
topic file (written by hand, or by an older memd) shows as its code point, ``<U+E0041>``."""

from __future__ import annotations

import asyncio

from pipeline.gitrepo.repository import MemoryRepo
from tests.daemon.ui.conftest import Opener
from tests.daemon.ui.support import Prepared, _commit
from tests.pipeline.consolidate.support import topic

HIDDEN = "".join(chr(0xE0000 + ord(c)) for c in "AB")


def test_the_topic_page_shows_invisible_characters_as_code_points(fresh: Prepared, open_page: Opener) -> None:
    memory_dir = fresh.settings.paths.memory_dir
    folder = memory_dir.joinpath(*fresh.acme.split("/"))
    (folder / "hidden.md").write_text(topic("Hidden", f"Be concise.{HIDDEN} Soft\u00adhyphen."))
    asyncio.run(_commit(MemoryRepo(memory_dir), f"{fresh.acme}/hidden.md"))
    _, client = open_page(fresh)
    html = client.get("/memory/topic", params={"scope": fresh.acme, "file": "hidden.md"}).text
    assert "Be concise.&lt;U+E0041&gt;&lt;U+E0042&gt; Soft&lt;U+00AD&gt;hyphen." in html
    assert "\U000e0041" not in html
    assert "\u00ad" not in html

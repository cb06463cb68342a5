"""The model client's protocol: light to import, and the real client is what the callers expect."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_the_protocol_and_its_callers_types_load_without_the_sdk() -> None:
    code = (
        "import sys, pipeline.llm.protocol, pipeline.extract.context, pipeline.consolidate.context; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('anthropic', 'httpx2')))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_client_answers_with_the_protocols_data_types() -> None:
    from pipeline.llm import client, protocol

    assert client.Reply is protocol.Reply
    assert client.BatchEntry is protocol.BatchEntry
    assert client.BatchInfo is protocol.BatchInfo

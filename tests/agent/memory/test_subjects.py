"""When a newer note replaces an older one: mutual near neighbours in meaning that share rare
words (or, without vectors, many shared words); never a name or code asked for exactly by a
note that lacks it; and in hybrid search the newer ranks just above the older, which says so."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from agent.memory.hybrid import HybridSearch
from agent.memory.index import MemoryIndex
from agent.memory.ranking import Candidate, Ranked
from agent.memory.semantic import SemanticIndex
from agent.memory.subjects import Subjects, newer_notes, note_words
from agent.settings import SearchSettings
from gateway.contract.events import OWNER
from tests.fakes.embedding_model import WordHashEmbedder

TEXTS = {
    1: "## 09:00\n\nAnna lives in Porto with the kids.",
    2: "## 10:00\n\nAnna moved to Lisbon with the kids last week.",
    3: "## 11:00\n\nAnna called about the weather, her garden and a summer trip to Sintra.",
    4: "## 12:00\n\nBike lock code is 4812.",
}
# How many of a thousand chunks hold each word: names and things are rare, the rest common.
COUNTS = {w: 900 for w in note_words(*TEXTS.values())} | {
    "anna": 100, "porto": 3, "lisbon": 3, "kids": 15, "moved": 30, "lives": 25, "bike": 10,
    "lock": 5, "code": 20, "4812": 1, "weather": 40, "called": 60, "garden": 30, "summer": 40,
    "trip": 30, "sintra": 1,
}  # fmt: skip


def _ranked(*ids_days: tuple[int, str]) -> list[Ranked]:
    return [Ranked(Candidate(i, TEXTS[i], day), 1.0, 0.0, None, 1.0) for i, day in ids_days]


def test_the_words_a_note_is_made_of_leave_its_headings_out():
    assert note_words("# 2026-03-05\n\n## 09:00\n\nAnna, Café Zoë") == {"anna", "cafe", "zoe"}


def test_mutual_near_neighbours_that_share_rare_words_are_one_subject():
    subjects = Subjects(TEXTS, set(), COUNTS, 1000)
    assert subjects.shared(1, 2) > subjects.shared(1, 3) > 0
    subjects.neighbours = {1: [1, 2, 3], 2: [2, 1], 3: [3, 1]}
    assert subjects.same(1, 2)  # near each other, and "Anna", "kids" shared
    assert not subjects.same(1, 3)  # near, but only "Anna" shared: another thing about her
    subjects.neighbours = {1: [1, 2], 2: [2, 4]}
    assert not subjects.same(1, 2)  # not among each other's nearest: not near enough
    subjects.neighbours = None  # without vectors, the words alone, at a higher bar
    assert subjects.same(1, 2) == (subjects.shared(1, 2) >= 0.5)
    assert not subjects.same(1, 4)


def test_a_note_that_holds_the_query_exactly_is_replaced_only_by_another_that_does():
    subjects = Subjects(TEXTS, {1}, COUNTS, 1000)
    subjects.neighbours = {1: [1, 2], 2: [2, 1]}
    assert not subjects.same(1, 2)
    subjects = Subjects(TEXTS, {1, 2}, COUNTS, 1000)
    subjects.neighbours = {1: [1, 2], 2: [2, 1]}
    assert subjects.same(1, 2)


def test_only_later_notes_that_are_allowed_replace_a_note():
    subjects = Subjects(TEXTS, set(), COUNTS, 1000)
    subjects.neighbours = {1: [1, 2, 3], 2: [2, 1, 3], 3: [3, 1, 2]}
    ranked = _ranked((1, "2026-01-10"), (2, "2026-09-12"), (3, "2026-10-01"))
    found = newer_notes(ranked, subjects, lambda r: True)
    assert {k: [r.candidate.id for r in v] for k, v in found.items()} == {1: [2]}
    assert newer_notes(ranked, subjects, lambda r: r.candidate.id != 2) == {}
    earlier = _ranked((1, "2026-09-12"), (2, "2026-01-10"))  # the move noted first
    found = newer_notes(earlier, subjects, lambda r: True)
    assert list(found) == [2]  # the later note is the one that replaces


def test_hybrid_search_puts_the_newer_note_above_the_one_it_replaces(tmp_path: Path):
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    logs = {
        "2025-12-06": "Anna lives in Porto with the kids, flat near the market.",
        "2026-09-12": "Anna moved with the kids: new flat in Lisbon, near the river.",
        "2026-10-01": "Anna called about the weather in Berlin.",
        "2026-03-03": "Watered the plants on the balcony.",
    }
    for day, text in logs.items():
        (ws / "memory" / f"{day}.md").write_text(f"# {day}\n\n## 09:00\n\n{text}\n")
    meanings = {"lives": "home", "moved": "home", "flat": "home", "live": "home"}
    index = MemoryIndex(tmp_path / "index.sqlite", ws)
    vectors = SemanticIndex(WordHashEmbedder(meanings), tmp_path / "embeddings.sqlite")
    index.listen(vectors)
    index.sync()
    vectors.catch_up()
    search = HybridSearch(index, vectors, SearchSettings(), lambda: date(2026, 11, 30))
    try:
        by_words = [h.path for h in index.search("where does Anna live porto", 3, audience=OWNER)]
        hits = search.search("where does Anna live porto", 3, audience=OWNER)
        # Asked about the time of the old note, nothing newer replaces it.
        dated = search.search("where did Anna live in December", 3, audience=OWNER)
    finally:
        vectors.close()
        index.close()
    assert by_words[0] == "memory/2025-12-06.md"  # "Porto": the old note holds the word
    assert [h.written for h in hits[:2]] == ["2026-09-12", "2025-12-06"]
    assert hits[1].newer == "memory/2026-09-12.md:1" and not hits[0].newer
    assert dated[0].written == "2025-12-06" and not dated[0].newer

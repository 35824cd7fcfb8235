"""When a newer note replaces an older one: near neighbours in meaning that share rare words,
or within a wider reach a note told again or two notes that hold the same words of the query
(without vectors, many shared words); never a name or code asked for exactly by a note that
lacks it; and in hybrid search the newer ranks just above the older, which says so, and a run
of copies takes one place."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import numpy as np

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


def _unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


# Notes 1 and 2 at a cosine of 0.8, note 3 at 0.6 from 1; each note's tenth nearest in all
# the memory at 0.7 and its nearest twentieth at 0.5 (the table's ``reach``).
VECTORS = {1: _unit(1, 0, 0), 2: _unit(0.8, 0.6, 0), 3: _unit(0.6, 0, 0.8), 4: _unit(0, 0, 1)}
REACH = {i: (0.7, 0.5) for i in VECTORS}


def _near(subjects: Subjects, vectors: dict[int, np.ndarray], reach: dict) -> None:
    subjects.near(vectors, reach)


def _subjects(exact: set[int] | None = None, query: dict[str, float] | None = None) -> Subjects:
    subjects = Subjects(TEXTS, exact or set(), COUNTS, 1000, query)
    _near(subjects, VECTORS, REACH)
    return subjects


def test_the_words_a_note_is_made_of_leave_its_headings_out():
    assert note_words("# 2026-03-05\n\n## 09:00\n\nAnna, Café Zoë") == {"anna", "cafe", "zoe"}


def test_near_neighbours_that_share_rare_words_are_one_subject():
    subjects = _subjects()
    assert subjects.shared(1, 2) > subjects.shared(1, 3) > 0
    assert subjects.same(1, 2)  # among each other's ten nearest, and "Anna", "kids" shared
    assert not subjects.same(1, 3)  # only "Anna" shared, and not that near: another thing
    far = Subjects(TEXTS, set(), COUNTS, 1000)
    _near(far, VECTORS, {i: (0.9, 0.85) for i in VECTORS})  # a memory crowded near both
    assert not far.same(1, 2)
    words_only = Subjects(TEXTS, set(), COUNTS, 1000)  # without vectors: the words, higher
    assert words_only.same(1, 2) == (words_only.shared(1, 2) >= 0.5)
    assert not words_only.same(1, 4)


def test_within_a_wider_reach_a_note_told_again_or_named_by_the_query_is_one_subject():
    crowded = {i: (0.9, 0.5) for i in VECTORS}  # copies of everyday entries fill the ten
    subjects = Subjects(TEXTS, set(), COUNTS, 1000)
    _near(subjects, VECTORS, crowded)
    assert subjects.shared(1, 2) < 0.5 and not subjects.same(1, 2)
    # The query names what both hold ("Anna", "kids"): their subject, so one subject.
    query = {"anna": 2.3, "kids": 4.2, "where": 1.0}
    asked = Subjects(TEXTS, set(), COUNTS, 1000, query)
    _near(asked, VECTORS, crowded)
    assert asked.same(1, 2)
    assert not asked.same(1, 4)  # nothing shared
    # A note told again (half its words' weight shared) replaces within the wider reach.
    again = {1: TEXTS[1], 5: "## 10:00\n\nAnna lives in Porto with the kids, by the sea."}
    told = Subjects(again, set(), COUNTS, 1000)
    _near(told, {1: VECTORS[1], 5: _unit(1, 0.5, 0)}, {1: (0.95, 0.5), 5: (0.95, 0.5)})
    assert told.told_again(1, 5) and told.same(1, 5)
    _near(told, {1: VECTORS[1], 5: _unit(0, 1, 0)}, {1: (0.95, 0.5), 5: (0.95, 0.5)})
    assert not told.same(1, 5)  # the same words, far apart in meaning


def test_a_short_newer_note_that_a_longer_ones_words_cover_does_not_tell_it_again():
    notes = {
        1: "Flight back TP 542 was cancelled; rebooked via Lisbon. TAP promised a refund.",
        2: "TAP refund arrived.",
        3: "Flight back TP 542 was cancelled; rebooked via Lisbon. TAP promised the refund.",
    }
    subjects = Subjects(notes, set(), {"tap": 3, "refund": 3, "542": 2}, 1000)
    assert subjects.shared(1, 2) > 0.5  # nearly all the short note's words are the long one's
    assert not subjects.told_again(1, 2)  # but it says little of what the long one says
    assert subjects.told_again(1, 3)  # a copy, a word changed


def test_a_note_that_holds_the_query_exactly_is_replaced_only_by_another_that_does():
    assert not _subjects(exact={1}).same(1, 2)
    assert _subjects(exact={1, 2}).same(1, 2)


def test_only_later_notes_that_are_allowed_replace_a_note():
    subjects = _subjects()
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


def _year(tmp_path: Path, logs: dict[str, list[str]]) -> tuple[MemoryIndex, SemanticIndex]:
    """The workspace's logs (a day's entries by path under the workspace), indexed and
    embedded with the word-hash model."""
    ws = tmp_path / "ws"
    for rel, entries in logs.items():
        day = rel.rsplit("/", 1)[-1].removesuffix(".md")
        body = "".join(f"## {9 + n:02d}:00\n\n{text}\n\n" for n, text in enumerate(entries))
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(f"# {day}\n\n{body}")
    index = MemoryIndex(tmp_path / "index.sqlite", ws)
    vectors = SemanticIndex(WordHashEmbedder(), tmp_path / "embeddings.sqlite")
    index.listen(vectors)
    index.sync()
    vectors.catch_up()
    return index, vectors


def test_copies_of_an_everyday_entry_take_one_place(tmp_path: Path):
    walks = {
        f"memory/2026-02-{1 + n:02d}.md": ["Walked Biscuit in the Mauerpark."] for n in range(14)
    }
    others = {
        "memory/2026-03-01.md": ["Biscuit's vet: teeth cleaning booked for the Mauerpark walkers."],
        "memory/2026-03-02.md": ["Bought Biscuit a new lead for walks in the park."],
    }
    index, vectors = _year(tmp_path, walks | others)
    search = HybridSearch(index, vectors, SearchSettings(), lambda: date(2026, 11, 30))
    try:
        hits = search.search("Biscuit walked Mauerpark", 5, audience=OWNER)
    finally:
        vectors.close()
        index.close()
    copies = [h for h in hits if h.path.startswith("memory/2026-02-")]
    assert [h.written for h in copies[:1]] == ["2026-02-14"]  # the newest of them
    assert len(copies) < 4 and {"2026-03-01", "2026-03-02"} <= {h.written for h in hits}
    assert all(h.newer for h in copies[1:])  # any older copy left says what said it again

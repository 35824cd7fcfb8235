"""The FTS5 memory index: chunking, ranking, scripts without spaces, incremental updates."""

from __future__ import annotations

import os
import random

import pytest

from agent.memory.index import MemoryIndex
from agent.memory.text import chunk_lines
from gateway.contract.events import OWNER, Audience


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    (root / "memory").mkdir(parents=True)
    return root


def index(ws, tmp_path) -> MemoryIndex:
    return MemoryIndex(tmp_path / "index.sqlite", ws, chunk_size=4, overlap=1)


def test_chunks_overlap_and_cover_every_line():
    text = "\n".join(f"line {i}" for i in range(1, 11))
    chunks = chunk_lines(text, 4, 1)
    assert [(s, e) for s, e, _ in chunks] == [(1, 4), (4, 7), (7, 10)]
    assert chunks[1][2].splitlines()[0] == "line 4"
    assert chunk_lines("", 4, 1) == []


def test_query_terms_are_quoted_so_fts_syntax_cannot_break_it(ws, tmp_path):
    (ws / "memory" / "2026-11-01.md").write_text("NEAR the kind river\n")
    idx = index(ws, tmp_path)
    assert idx._plan(["NEAR", "a", "OR", "x"]) == '"NEAR"* OR "a" OR "OR" OR "x"'
    for query in ('NEAR(a b) OR "x" -- *', "kind : longterm", "body:(", "!!!", "^river"):
        idx.search(query, audience=OWNER)  # must not raise
    assert idx.search("!!!", audience=OWNER) == []
    assert idx.search("kind : longterm", audience=OWNER)[0].path.startswith("memory/")


def test_terms_in_most_chunks_are_left_out_when_rarer_ones_remain(ws, tmp_path):
    for i in range(10):
        (ws / "memory" / f"2026-10-{i + 1:02d}.md").write_text(f"the meeting went fine {i}\n")
    (ws / "memory" / "2026-10-20.md").write_text("the meeting about the zeppelin\n")
    idx = index(ws, tmp_path)
    idx.sync()
    assert idx._plan(["the", "meeting", "zeppelin"]) == '"zeppelin"*'
    assert idx._plan(["the", "meeting"]) == '"the"* OR "meeting"*'
    assert [h.path for h in idx.search("the meeting zeppelin", audience=OWNER)] == [
        "memory/2026-10-20.md"
    ]
    # A rare word that is in no chunk does not leave the common ones out: they are all there is.
    assert idx._plan(["the", "meeting", "qz"]) == '"the"* OR "meeting"* OR "qz"'


def test_words_that_no_chunk_holds_are_not_looked_for_and_nothing_is_lost(ws, tmp_path):
    """A query none of whose ASCII words (or prefixes) any chunk holds is answered without
    asking the index: over random queries of words in and out of the chunks, each one so
    answered is one that the full-text query finds nothing for. A word in another script is
    always looked for."""
    rng = random.Random(20261127)
    vocab = ["cedar", "dentist", "friday", "plover", "kestrel", "on", "at", "42", "x9"]
    for i in range(12):
        words = rng.sample(vocab, 3)
        (ws / "memory" / f"2026-10-{i + 1:02d}.md").write_text(" ".join(words) + "\n")
    idx = index(ws, tmp_path)
    idx.sync()
    ran: list[str] = []
    idx._db.set_trace_callback(ran.append)
    pool = [*vocab, "ced", "dent", "zeppelin", "ce", "o", "4", "421", "cedars", "Kestrel"]
    skipped = 0
    for _ in range(300):
        query = " ".join(rng.sample(pool, rng.randint(1, 3)))
        ran.clear()
        hits = idx.search(query, audience=OWNER)
        if any("MATCH" in sql for sql in ran):
            continue
        skipped += 1
        assert hits == []
        plan = idx._plan(query.split())
        found = idx._db.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?", (plan,))
        assert found.fetchall() == [], query
    assert 20 < skipped < 300
    ran.clear()
    assert idx.search_at_once("zeppelin 421", audience=OWNER) == []  # the counts were kept
    assert not any("MATCH" in sql for sql in ran)
    assert idx.search("zeppelín", audience=OWNER) == []  # not ASCII: asked all the same
    assert any("MATCH" in sql for sql in ran)
    idx.close()


def test_in_a_big_memory_a_term_in_a_tenth_of_the_chunks_is_left_out_too(ws, tmp_path, monkeypatch):
    for i in range(30):
        words = "meeting notes" if i < 10 else "garden notes"
        (ws / "memory" / f"2026-09-{i + 1:02d}.md").write_text(f"{words} {i}\n")
    (ws / "memory" / "2026-10-20.md").write_text("the meeting about the zeppelin\n")
    idx = index(ws, tmp_path)
    idx.sync()
    assert idx._plan(["meeting", "zeppelin"]) == '"meeting"* OR "zeppelin"*'  # a third: kept
    monkeypatch.setattr("agent.memory.index.COMMON_CHUNKS", 5)  # as if a thousand were few
    assert idx._plan(["meeting", "zeppelin"]) == '"zeppelin"*'
    assert idx._plan(["meeting", "qz"]) == '"meeting"* OR "qz"'  # nothing rarer that is there
    idx.close()


def test_a_term_in_exactly_half_of_the_chunks_is_kept(ws, tmp_path):
    for i, text in enumerate(("alpha zebra", "alpha", "gamma", "delta")):
        (ws / "memory" / f"2026-10-0{i + 1}.md").write_text(text + "\n")
    idx = index(ws, tmp_path)
    idx.sync()
    assert idx._plan(["alpha", "zebra"]) == '"alpha"* OR "zebra"*'


def test_search_ranks_finds_multiple_scripts_and_hides_long_term(ws, tmp_path):
    (ws / "memory" / "2026-11-01.md").write_text("## 09:00\n\nDentist appointment on Friday\n")
    (ws / "memory" / "2026-11-02.md").write_text("## 10:00\n\nВстреча с Иваном в понедельник\n")
    (ws / "memory" / "2026-11-03.md").write_text("## 11:00\n\n下周一和王经理开会讨论预算\n")
    (ws / "MEMORY.md").write_text("Allergic to penicillin. Dentist is Dr. Kim.\n")
    chat = ws / "memory" / "chats" / "telegram-group--5"
    chat.mkdir(parents=True)
    (chat / "2026-11-01.md").write_text("## 12:00 · telegram:group:-5\n\nDentist jokes\n")
    idx = index(ws, tmp_path)
    hits = idx.search("dentist", audience=OWNER)
    assert {h.path for h in hits} == {
        "memory/2026-11-01.md",
        "MEMORY.md",
        "memory/chats/telegram-group--5/2026-11-01.md",
    }
    # A shared chat finds its own log only: not MEMORY.md, not the owner's log.
    shared = idx.search("dentist", audience=Audience("telegram-group--5"))
    assert [(h.path, h.chat) for h in shared] == [
        ("memory/chats/telegram-group--5/2026-11-01.md", "telegram-group--5")
    ]
    assert idx.search("dentist", audience=Audience("telegram-group--6")) == []
    assert all(h.score >= 0 for h in hits)
    [ru] = idx.search("понедельник", audience=OWNER)
    assert ru.path == "memory/2026-11-02.md" and "Иваном" in ru.snippet
    assert idx.search("ИВАНОМ", audience=OWNER)[0].path == "memory/2026-11-02.md"
    [zh] = idx.search("开会", audience=OWNER)
    assert zh.path == "memory/2026-11-03.md" and (zh.start_line, zh.end_line) == (1, 3)
    assert idx.search("预算 王经理", audience=OWNER)[0].path == "memory/2026-11-03.md"
    assert idx.search("会开", audience=OWNER) == []  # characters must be adjacent
    assert idx.search("penicillin", audience=Audience("telegram-group--5")) == []


def test_newest_log_first_on_equal_scores(ws, tmp_path):
    for day in ("2026-01-05", "2026-03-01", "2026-02-10"):
        (ws / "memory" / f"{day}.md").write_text("bought oat milk\n")
    hits = index(ws, tmp_path).search("oat milk", audience=OWNER)
    assert [h.path for h in hits] == [
        "memory/2026-03-01.md",
        "memory/2026-02-10.md",
        "memory/2026-01-05.md",
    ]


def test_incremental_updates_edits_deletes_and_rebuild(ws, tmp_path):
    log = ws / "memory" / "2026-11-01.md"
    log.write_text("alpha\n")
    idx = index(ws, tmp_path)
    assert idx.sync() == 1 and idx.sync() == 0
    with log.open("a") as f:
        f.write("bravo\n")
    assert idx.search("bravo", audience=OWNER)[0].path == "memory/2026-11-01.md"
    st = log.stat()
    os.utime(log, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000))  # touched, same content
    assert idx.sync() == 0
    log.unlink()
    assert idx.search("alpha", audience=OWNER) == []
    (ws / "memory" / "2026-11-02.md").write_text("charlie\n")
    assert idx.rebuild() == 1
    assert idx.search("charlie", audience=OWNER)[0].path == "memory/2026-11-02.md"
    idx.close()
    reopened = index(ws, tmp_path)
    assert reopened.sync() == 0


def test_bm25_prefers_the_more_relevant_chunk(ws, tmp_path):
    for i in range(20):
        (ws / "memory" / f"2026-10-{i + 1:02d}.md").write_text(f"ordinary day number {i}\n")
    (ws / "memory" / "2026-09-01.md").write_text("falcon launch; falcon budget; falcon team\n")
    (ws / "memory" / "2026-09-02.md").write_text(
        "lunch, then a word about falcon and many other "
        "things that filled a long and busy afternoon\n"
    )
    hits = index(ws, tmp_path).search("falcon", audience=OWNER)
    assert [h.path for h in hits] == ["memory/2026-09-01.md", "memory/2026-09-02.md"]
    assert hits[0].score > hits[1].score > 0
    assert [round(h.score, 3) for h in hits] == [h.score for h in hits]  # shown to 3 places


def test_equal_scores_on_the_same_day_come_in_path_order(ws, tmp_path):
    (ws / "memory" / "zz-notes.md").write_text("bought oat milk\n")
    (ws / "memory" / "aa-notes.md").write_text("bought oat milk\n")
    (ws / "memory" / "mm-notes.md").write_text("bought oat milk\n")
    hits = index(ws, tmp_path).search("oat milk", audience=OWNER)
    assert [h.path for h in hits] == [
        "memory/aa-notes.md",
        "memory/mm-notes.md",
        "memory/zz-notes.md",
    ]

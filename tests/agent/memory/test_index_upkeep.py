"""The search index's upkeep: full catch-ups and rebuilds see every file, an index damaged on
disk or while in use is made anew from the files, and whoever keeps vectors of the chunks is
told exactly the chunks the index holds."""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest

from agent.memory.hits import ChunkRow, TextsOf
from agent.memory.index import MemoryIndex
from gateway.contract.events import OWNER


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "memory").mkdir(parents=True)
    for day, tree in (("2026-11-01", "alder"), ("2026-11-02", "birch"), ("2026-11-03", "cedar")):
        (root / "memory" / f"{day}.md").write_text(f"## 09:00\n\nfalcon note under the {tree}\n")
    return root


def open_index(tmp_path: Path, ws: Path) -> MemoryIndex:
    return MemoryIndex(tmp_path / "index.sqlite", ws, chunk_size=4, overlap=1)


class Listener:
    """Keeps the chunks it was told of, as a vector table would."""

    def __init__(self) -> None:
        self.chunks: dict[int, str] = {}
        self.calls: list[str] = []

    def chunks_reset(self, rows: Sequence[ChunkRow], texts_of: TextsOf) -> None:
        self.calls.append("reset")
        self.chunks = {i: sha for i, _, sha in rows}

    def chunks_changed(self, removed: Sequence[int], added: Sequence[ChunkRow]) -> None:
        self.calls.append("changed")
        for i in removed:
            del self.chunks[i]
        self.chunks.update({i: sha for i, _, sha in added})


def stored(idx: MemoryIndex) -> dict[int, str]:
    with sqlite3.connect(idx.db_path) as db:
        return dict(db.execute("SELECT id, sha FROM chunks").fetchall())


def damage(idx: MemoryIndex) -> None:
    """Something else drops the full-text table under the running index."""
    db = sqlite3.connect(idx.db_path)
    db.execute("DROP TABLE chunks_fts")
    db.close()


def test_sync_sees_an_edit_to_an_old_log_between_full_scans(ws, tmp_path):
    idx = open_index(tmp_path, ws)
    assert idx.sync() == 3
    idx.search("falcon", audience=OWNER)  # a search's catch-up: the folder did not change
    (ws / "memory" / "2026-11-01.md").write_text("## 09:00\n\nheron note, rewritten\n")
    assert idx.sync() == 1
    assert [h.path for h in idx.search("heron", audience=OWNER)] == ["memory/2026-11-01.md"]


def test_rebuild_indexes_every_file_again_and_the_listener_holds_what_the_index_holds(ws, tmp_path):
    idx = open_index(tmp_path, ws)
    listener = Listener()
    idx.listen(listener)
    idx.sync()
    assert listener.chunks == stored(idx) and len(listener.chunks) == 3
    (ws / "memory" / "2026-11-01.md").unlink()
    assert idx.rebuild() == 2
    assert listener.chunks == stored(idx) and len(listener.chunks) == 2
    assert idx.chunk_count == 2
    assert len(idx.search("falcon", audience=OWNER)) == 2
    assert idx.rebuild() == 2  # the folder did not change since: every file all the same


def test_a_catch_up_that_changed_nothing_tells_the_listener_nothing(ws, tmp_path):
    idx = open_index(tmp_path, ws)
    listener = Listener()
    idx.listen(listener)
    idx.sync()
    listener.calls.clear()
    idx.sync()
    idx.search("falcon", audience=OWNER)
    assert listener.calls == []


def test_an_index_damaged_while_in_use_is_made_anew_and_searched_again(ws, tmp_path, caplog):
    idx = open_index(tmp_path, ws)
    listener = Listener()
    idx.listen(listener)
    assert len(idx.search("falcon", audience=OWNER)) == 3
    damage(idx)  # no file changed: the catch-up alone would not touch the damaged table
    caplog.set_level(logging.WARNING)
    assert len(idx.search("falcon", audience=OWNER)) == 3
    assert "rebuilding it from the files" in caplog.text
    assert listener.chunks == stored(idx) and idx.chunk_count == 3


def test_a_damaged_index_whose_files_are_gone_counts_no_chunks(ws, tmp_path):
    idx = open_index(tmp_path, ws)
    listener = Listener()
    idx.listen(listener)
    idx.sync()
    for log in (ws / "memory").glob("*.md"):
        log.unlink()
    damage(idx)
    assert idx.search("falcon", audience=OWNER) == []
    assert idx.chunk_count == 0 and listener.chunks == {}


def test_rebuild_of_a_damaged_index_starts_from_an_empty_one(ws, tmp_path):
    idx = open_index(tmp_path, ws)
    listener = Listener()
    idx.listen(listener)
    idx.sync()
    damage(idx)
    assert idx.rebuild() == 3
    assert listener.chunks == stored(idx) and len(idx.search("falcon", audience=OWNER)) == 3


def test_an_index_missing_a_table_at_start_is_made_anew(ws, tmp_path):
    open_index(tmp_path, ws).close()
    with sqlite3.connect(tmp_path / "index.sqlite") as db:
        db.execute("DROP TABLE chunks")  # the version still says all is well
    idx = open_index(tmp_path, ws)
    assert len(idx.search("falcon", audience=OWNER)) == 3


def test_an_index_of_an_older_version_is_dropped_and_rebuilt(ws, tmp_path, caplog):
    with sqlite3.connect(tmp_path / "index.sqlite") as db:
        db.execute("CREATE TABLE chunks (id INTEGER PRIMARY KEY, path TEXT, text TEXT)")
        db.execute("CREATE TABLE files (path TEXT PRIMARY KEY, mtime_ns INTEGER)")
        db.execute("PRAGMA user_version = 2")
    caplog.set_level(logging.WARNING)
    idx = open_index(tmp_path, ws)
    assert [h.chat for h in idx.search("falcon", audience=OWNER)] == ["", "", ""]
    assert caplog.text == ""  # expected, not damage: nothing to warn of


def test_the_index_is_written_ahead_and_closing_leaves_one_file(ws, tmp_path):
    idx = open_index(tmp_path, ws)
    idx.sync()
    wal = tmp_path / "index.sqlite-wal"
    assert wal.exists()  # readers and the catch-up's writes do not block each other
    idx.close()
    assert not wal.exists()  # the last connection closed checkpoints and removes it
    with pytest.raises(sqlite3.ProgrammingError):
        idx.sync()


def test_a_deleted_note_leaves_nothing_behind_even_when_a_new_one_takes_its_place(
    ws, tmp_path, caplog
):
    caplog.set_level(logging.WARNING)
    idx = open_index(tmp_path, ws)
    listener = Listener()
    idx.listen(listener)
    idx.sync()
    with sqlite3.connect(idx.db_path) as db:
        (last,) = db.execute("SELECT path FROM chunks ORDER BY id DESC LIMIT 1").fetchone()
    word = (ws / last).read_text().split()[-1]
    (ws / last).unlink()  # the chunk with the highest id: its id is free again
    assert idx.sync() == 1 and idx.sync() == 0
    assert idx.chunk_count == 2 and listener.chunks == stored(idx)
    (ws / "memory" / "2026-11-04.md").write_text("## 09:00\n\nosprey, a new note\n")
    assert idx.sync() == 1
    assert idx.search(word, audience=OWNER) == []
    assert [h.path for h in idx.search("osprey", audience=OWNER)] == ["memory/2026-11-04.md"]
    assert listener.chunks == stored(idx)
    assert caplog.text == ""  # no repair was needed on the way


def test_an_edited_note_is_found_by_its_new_words_only(ws, tmp_path):
    idx = open_index(tmp_path, ws)
    idx.sync()
    (ws / "memory" / "2026-11-02.md").write_text("## 09:00\n\nkestrel note\n")
    assert [h.path for h in idx.search("kestrel", audience=OWNER)] == ["memory/2026-11-02.md"]
    assert [h.path for h in idx.search("falcon", audience=OWNER)] == [
        "memory/2026-11-03.md",
        "memory/2026-11-01.md",
    ]
    assert idx.chunk_count == 3


def test_between_full_scans_an_old_log_edited_in_place_is_seen_within_the_interval(
    ws, tmp_path, monkeypatch
):
    from agent.memory import catchup

    now = [1000.0]
    monkeypatch.setattr(catchup.time, "monotonic", lambda: now[0])
    idx = open_index(tmp_path, ws)
    idx.sync()
    (ws / "memory" / "2026-11-01.md").write_text("## 09:00\n\nheron note\n")  # folder unchanged
    assert idx.search("heron", audience=OWNER) == []  # only the newest logs are looked at
    now[0] += catchup.FULL_SCAN_SECONDS
    assert idx.search("heron", audience=OWNER) == []
    now[0] += 0.001
    assert [h.path for h in idx.search("heron", audience=OWNER)] == ["memory/2026-11-01.md"]


def test_a_touched_file_with_the_same_text_is_read_once_not_at_every_catch_up(
    ws, tmp_path, monkeypatch
):
    idx = open_index(tmp_path, ws)
    idx.sync()
    log = ws / "memory" / "2026-11-01.md"
    st = log.stat()
    os.utime(log, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000))
    from agent.memory.catchup import CatchUp

    reads: list[str] = []
    read = CatchUp._read
    monkeypatch.setattr(CatchUp, "_read", lambda self, rel: reads.append(rel) or read(self, rel))
    assert idx.sync() == 0 and idx.sync() == 0
    assert reads == ["memory/2026-11-01.md"]


def test_a_catch_up_cut_off_midway_keeps_nothing_half_done_and_the_next_one_completes(
    ws, tmp_path, monkeypatch, caplog
):
    from agent.memory import catchup

    cut = catchup.chunk_entries

    def failing(text: str, size: int, overlap: int):
        if "birch" in text:
            raise RuntimeError("cut off")
        return cut(text, size, overlap)

    caplog.set_level(logging.WARNING)
    idx = open_index(tmp_path, ws)
    monkeypatch.setattr(catchup, "chunk_entries", failing)
    with pytest.raises(RuntimeError, match="cut off"):
        idx.sync()
    assert stored(idx) == {}  # the files indexed before the failure are rolled back too
    monkeypatch.setattr(catchup, "chunk_entries", cut)
    # The search after it scans every file again, not only the newest few.
    assert len(idx.search("falcon", audience=OWNER)) == 3
    assert idx.sync() == 0
    assert caplog.text == ""  # no damage: nothing was rebuilt


def test_errors_that_are_not_damage_are_raised_and_the_index_is_kept(ws, tmp_path, caplog):
    caplog.set_level(logging.WARNING)
    idx = open_index(tmp_path, ws)
    idx.sync()
    assert idx.text_matches([], 5, audience=OWNER).rows == []
    idx.close()
    with pytest.raises(sqlite3.ProgrammingError):
        idx.search("falcon", audience=OWNER)
    with pytest.raises(sqlite3.ProgrammingError):
        idx.rebuild()
    assert caplog.text == ""
    again = open_index(tmp_path, ws)
    assert again.chunk_count == 3 and again.sync() == 0  # nothing to index again
    again.close()


def test_a_workspace_without_a_memory_folder_searches_memory_md_then_the_folder_once_made(
    ws, tmp_path
):
    for log in (ws / "memory").iterdir():
        log.unlink()
    (ws / "memory").rmdir()
    (ws / "MEMORY.md").write_text("## Birds\n\n- falcon facts\n")
    idx = open_index(tmp_path, ws)
    assert [h.path for h in idx.search("falcon", audience=OWNER)] == ["MEMORY.md"]
    (ws / "memory").mkdir()
    (ws / "memory" / "2026-11-05.md").write_text("## 09:00\n\nfalcon sighting\n")
    assert len(idx.search("falcon", audience=OWNER)) == 2


def test_after_a_failed_catch_up_the_next_search_looks_at_every_file_again(
    ws, tmp_path, monkeypatch
):
    from agent.memory import catchup

    cut = catchup.chunk_entries
    idx = open_index(tmp_path, ws)
    idx.sync()
    (ws / "memory" / "2026-11-01.md").write_text("## 09:00\n\nheron note\n")  # an old log
    monkeypatch.setattr(catchup, "chunk_entries", lambda *a: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        idx.sync()
    monkeypatch.setattr(catchup, "chunk_entries", cut)
    assert [h.path for h in idx.search("heron", audience=OWNER)] == ["memory/2026-11-01.md"]


def test_what_counts_as_damage(tmp_path):
    from agent.memory.index import _damaged

    def error(db: sqlite3.Connection, sql: str) -> sqlite3.DatabaseError:
        with pytest.raises(sqlite3.DatabaseError) as caught:
            db.execute(sql)
        return caught.value

    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(body)")
    assert _damaged(error(db, "SELECT * FROM gone"))  # no such table
    assert not _damaged(error(db, "SELEC 1"))  # a mistake, not damage
    assert not _damaged(error(db, "SELECT * FROM t WHERE t MATCH '\"unclosed'"))
    with sqlite3.connect(tmp_path / "fts.sqlite") as other:
        other.execute("CREATE VIRTUAL TABLE t USING fts5(body)")
        other.execute("DROP TABLE t_config")  # one of FTS5's own tables
    other.close()
    assert _damaged(error(sqlite3.connect(tmp_path / "fts.sqlite"), "SELECT * FROM t"))
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"not a database at all" * 100)
    assert _damaged(error(sqlite3.connect(garbage), "SELECT * FROM sqlite_master"))
    db.close()
    assert not _damaged(error(db, "SELECT 1"))  # closed


def test_an_index_that_cannot_be_opened_is_an_error_not_damage(ws, tmp_path, caplog):
    caplog.set_level(logging.WARNING)
    open_index(tmp_path, ws).close()
    (tmp_path / "index.sqlite-wal").mkdir()  # where SQLite must write: it cannot open it
    with pytest.raises(sqlite3.OperationalError) as caught:
        open_index(tmp_path, ws)
    assert caught.value.sqlite_errorname == "SQLITE_CANTOPEN"
    assert (tmp_path / "index.sqlite").is_file() and caplog.text == ""  # kept, not rebuilt


def _statements(idx: MemoryIndex) -> list[str]:
    ran: list[str] = []
    idx._db.set_trace_callback(ran.append)
    return ran


def test_a_search_with_no_file_changed_reads_nothing_of_the_files_table(ws, tmp_path):
    """Between full scans, a catch-up whose hot files are as it left them costs only their
    stats; an append to one, a new log, MEMORY.md rewritten are each still found next."""
    idx = open_index(tmp_path, ws)
    assert [h.path for h in idx.search("cedar", audience=OWNER)] == ["memory/2026-11-03.md"]
    ran = _statements(idx)
    assert idx.search("cedar", audience=OWNER)
    assert ran and not [s for s in ran if "files" in s or s in ("BEGIN", "COMMIT")]
    with (ws / "memory" / "2026-11-03.md").open("a") as f:
        f.write("\n## 10:00\n\nplover by the pond\n")
    assert [h.path for h in idx.search("plover", audience=OWNER)] == ["memory/2026-11-03.md"]
    assert any("FROM files" in s for s in ran)  # looked at the files again
    (ws / "memory" / "2026-11-04.md").write_text("## 08:00\n\nkestrel at dawn\n")
    assert [h.path for h in idx.search("kestrel", audience=OWNER)] == ["memory/2026-11-04.md"]
    (ws / "MEMORY.md").write_text("- wren nests in the hedge\n")
    idx.sync()
    (ws / "MEMORY.md").write_text("- starling nests in the hedge\n")
    assert [h.path for h in idx.search("starling", audience=OWNER)] == ["MEMORY.md"]
    assert idx.search("wren", audience=OWNER) == []
    idx.close()


def test_a_search_at_once_is_the_search_when_nothing_is_to_be_read_and_declines_otherwise(
    ws, tmp_path
):
    import threading

    idx = open_index(tmp_path, ws)
    assert idx.search_at_once("cedar", audience=OWNER) is None  # never caught up yet
    hits = idx.search("falcon", audience=OWNER)
    assert len(hits) == 3
    assert idx.search_at_once("falcon", audience=OWNER) == hits
    assert idx.search_at_once("falcon", 1, audience=OWNER) == hits[:1]
    assert idx.search_at_once("  ", audience=OWNER) == []
    with (ws / "memory" / "2026-11-02.md").open("a") as f:
        f.write("\n## 11:00\n\nmore falcon\n")
    assert idx.search_at_once("falcon", audience=OWNER) is None  # a file to read first
    assert idx.search("falcon", audience=OWNER)
    assert idx.search_at_once("falcon", audience=OWNER) is not None
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with idx._lock:
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(10)
        assert idx.search_at_once("falcon", audience=OWNER) is None  # never waits for the lock
    finally:
        release.set()
        holder.join(10)
    idx.close()


def test_after_a_damaged_index_is_made_anew_nothing_is_taken_as_caught_up(ws, tmp_path):
    idx = open_index(tmp_path, ws)
    assert idx.search("cedar", audience=OWNER)
    damage(idx)
    assert idx.search_at_once("cedar", audience=OWNER) is None  # the worker's search repairs
    assert [h.path for h in idx.search("cedar", audience=OWNER)] == ["memory/2026-11-03.md"]
    assert [h.path for h in idx.search_at_once("cedar", audience=OWNER) or []] == [
        "memory/2026-11-03.md"
    ]
    idx.close()


def test_a_bigger_index_is_never_searched_at_once(ws, tmp_path, monkeypatch):
    from agent.memory import index

    idx = open_index(tmp_path, ws)
    hits = idx.search("falcon", audience=OWNER)
    assert idx.search_at_once("falcon", audience=OWNER) == hits
    monkeypatch.setattr(index, "AT_ONCE_CHUNKS", idx.chunk_count - 1)
    assert idx.search_at_once("falcon", audience=OWNER) is None  # for a worker thread
    idx.close()


def test_how_many_chunks_hold_a_term_is_asked_once_until_the_index_changes(ws, tmp_path):
    idx = open_index(tmp_path, ws)
    assert len(idx.search("falcon alder", audience=OWNER)) == 1  # falcon: in every chunk
    ran = _statements(idx)
    idx.search("falcon alder", audience=OWNER)
    assert not [s for s in ran if "chunks_vocab" in s]  # the counts are kept
    with (ws / "memory" / "2026-11-03.md").open("a") as f:
        f.write("\n## 10:00\n\nalder by the river\n")
    ran.clear()
    hits = idx.search("alder", audience=OWNER)
    assert [s for s in ran if "chunks_vocab" in s]  # counted again after the change
    assert sorted(h.path for h in hits) == ["memory/2026-11-01.md", "memory/2026-11-03.md"]
    (ws / "memory" / "2026-11-01.md").unlink()
    (ws / "memory" / "2026-11-03.md").unlink()
    idx.rebuild()
    assert idx.search("alder", audience=OWNER) == []
    assert idx._doc_freq == {("alder", True): 0}
    idx.close()

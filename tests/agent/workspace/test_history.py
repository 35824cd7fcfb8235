"""The workspace's history: changes recorded with their author, hand edits found, undo and
restore, and a shared chat that sees only its own places' changes."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from agent.tools.files import atomic_write
from agent.workspace.changes import HAND_EDIT, Author, authored
from agent.workspace.history import History
from gateway.contract.errors import ToolError
from gateway.contract.events import OWNER, Audience

GROUP = Audience("telegram-group--100")
OTHER = Audience("telegram-group--200")


@pytest.fixture
def history(tmp_path: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    h = History(ws, tmp_path / "state" / "history.sqlite")
    yield h
    h.close()


def write(history: History, rel: str, text: str, who: str = "telegram:private:1") -> None:
    with authored(Author(who, "write_file")):
        atomic_write(history.workspace / rel, text, history=history)


def test_each_write_is_recorded_with_its_author_and_diff(history):
    write(history, "MEMORY.md", "- likes tea\n")
    write(history, "MEMORY.md", "- likes coffee\n", who="cron:private:consolidation")
    newest, first = history.changes(OWNER, "MEMORY.md")
    assert (first.who, first.what, first.before) == ("telegram:private:1", "write_file", None)
    assert newest.who == "cron:private:consolidation"
    assert newest.before == first.after
    diff = history.diff(newest)
    assert "-- likes tea\n" in diff and "+- likes coffee\n" in diff
    db = history.workspace.parent / "state" / "history.sqlite"
    assert stat.S_IMODE(db.stat().st_mode) == 0o600


def test_a_write_that_changes_nothing_is_not_recorded(history):
    write(history, "notes.md", "same\n")
    write(history, "notes.md", "same\n")
    assert len(history.changes(OWNER)) == 1


def test_a_hand_edit_is_found_before_the_next_write_and_by_look(history):
    write(history, "MEMORY.md", "one\n")
    (history.workspace / "MEMORY.md").write_text("one\nby hand\n")
    write(history, "MEMORY.md", "one\nby hand\nthree\n")
    kinds = [c.who for c in history.changes(OWNER, "MEMORY.md")]
    assert kinds == ["telegram:private:1", HAND_EDIT, "telegram:private:1"]
    (history.workspace / "MEMORY.md").write_text("again by hand\n")
    assert history.look() == 1
    assert history.look() == 0
    latest = history.changes(OWNER, "MEMORY.md")[0]
    assert latest.who == HAND_EDIT and history.content(latest.after) == b"again by hand\n"


def test_undo_walks_back_and_refuses_a_file_changed_since(history):
    path = history.workspace / "MEMORY.md"
    write(history, "MEMORY.md", "v1\n")
    write(history, "MEMORY.md", "v2\n")
    write(history, "notes/new.md", "fresh\n")
    me = Author("the owner, in the terminal")
    assert history.undo(OWNER, me).path == "notes/new.md"
    assert not (history.workspace / "notes/new.md").exists()
    assert history.undo(OWNER, me).path == "MEMORY.md"
    assert path.read_text() == "v1\n"
    assert history.changes(OWNER, "MEMORY.md")[0].what == "undo of #2"
    write(history, "MEMORY.md", "v3\n")
    undone = history.undo(OWNER, me)
    assert undone.id == 6 and path.read_text() == "v1\n"
    write(history, "MEMORY.md", "v4\n")
    path.write_text("edited by hand after\n")
    # The hand edit is found and is itself the newest change: undo takes it back.
    history.undo(OWNER, me)
    assert path.read_text() == "v4\n"


def test_undo_takes_back_an_unseen_hand_edit_first_and_a_shared_chat_nothing(history):
    path = history.workspace / "MEMORY.md"
    write(history, "MEMORY.md", "v1\n")
    write(history, "other.md", "x\n")
    path.write_text("hand\n")  # not looked at yet: the newest recorded change is other.md's
    with pytest.raises(ToolError, match="nothing to undo"):
        history.undo(Audience("telegram-group--1"), Author("a group"))
    assert path.read_text() == "hand\n"
    assert history.undo(OWNER, Author("me")).who == HAND_EDIT
    assert path.read_text() == "v1\n"
    assert history.undo(OWNER, Author("me")).path == "other.md"
    assert not (history.workspace / "other.md").exists()


def test_restore_by_number_and_by_time(history):
    path = history.workspace / "MEMORY.md"
    write(history, "MEMORY.md", "v1\n")
    first = history.changes(OWNER, "MEMORY.md")[0]
    write(history, "MEMORY.md", "v2\n")
    history.restore(OWNER, "MEMORY.md", f"#{first.id}", Author("me"))
    assert path.read_text() == "v1\n"
    assert history.changes(OWNER, "MEMORY.md")[0].what == f"restore to #{first.id}"
    history.restore(OWNER, "MEMORY.md", first.at.isoformat(), Author("me"))
    assert path.read_text() == "v1\n"
    with pytest.raises(ToolError, match="no change #99"):
        history.restore(OWNER, "MEMORY.md", "99", Author("me"))
    with pytest.raises(ToolError, match="no recorded version"):
        history.restore(OWNER, "MEMORY.md", "2001-01-01T00:00:00", Author("me"))


def test_a_shared_chat_sees_only_its_own_places_history(history):
    write(history, "MEMORY.md", "owner's secret\n")
    write(history, "AGENTS.md", "everyone's\n")
    write(history, "chats/telegram-group--100/plan.md", "group plan\n", who="telegram:group:-100")
    write(history, "chats/telegram-group--200/x.md", "other\n", who="telegram:group:-200")
    assert [c.path for c in history.changes(GROUP)] == ["chats/telegram-group--100/plan.md"]
    assert history.changes(GROUP, "MEMORY.md") == []
    assert history.change(GROUP, 1) is None
    assert [c.path for c in history.changes(OTHER)] == ["chats/telegram-group--200/x.md"]
    assert len(history.changes(OWNER)) == 4
    with pytest.raises(ToolError):
        history.restore(GROUP, "MEMORY.md", "1", Author("group"))


def test_the_history_keeps_only_its_newest_pages_in_memory(history):
    """Versions are added at the end: SQLite's default 2 MiB page cache filled with old ones
    (2 MiB more after 6,000 writes of bench/history_bench.py's replay)."""
    assert history._db.execute("PRAGMA cache_size").fetchone()[0] == -256


# -- each rule of the history at its edge (the mutation bench's survivors) --------------------


def test_what_is_kept_is_a_regular_file_of_at_most_four_million_bytes(tmp_path):
    import os

    from agent.workspace.history import MAX_KEPT_BYTES, _read

    assert MAX_KEPT_BYTES == 4_000_000  # the manual's figure (History and undo)
    (tmp_path / "exact").write_bytes(b"x" * MAX_KEPT_BYTES)
    (tmp_path / "over").write_bytes(b"x" * (MAX_KEPT_BYTES + 1))
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "folder").mkdir()
    assert _read(tmp_path / "exact") == b"x" * MAX_KEPT_BYTES
    assert _read(tmp_path / "over") is None
    assert _read(tmp_path / "pipe") is None  # never read: it is no file of the owner's
    open_before = len(os.listdir("/proc/self/fd"))
    assert _read(tmp_path / "folder") is None and _read(tmp_path / "gone") is None
    assert len(os.listdir("/proc/self/fd")) == open_before  # the folder's not held open


def test_a_run_of_appends_is_kept_as_what_each_adds_and_cut_every_64_versions(history):
    import sqlite3

    from agent.workspace.history import MAX_DEPTH

    texts = ["# log\n"]
    for n in range(MAX_DEPTH + 5):
        texts.append(texts[-1] + f"entry {n}\n")
    for text in texts:
        write(history, "memory/log.md", text)
    db = sqlite3.connect(history.workspace.parent / "state" / "history.sqlite")
    depths = [d for (d,) in db.execute("SELECT depth FROM blobs ORDER BY rowid")]
    db.close()
    assert depths == [*range(MAX_DEPTH + 1), *range(5)]
    versions = history.changes(OWNER, "memory/log.md", limit=100)
    assert [history.content(c.after) for c in reversed(versions)] == [t.encode() for t in texts]


def test_a_new_history_is_stamped_with_its_schema_an_old_one_keeps_its_stamp(tmp_path):
    import sqlite3

    from agent.workspace.history import SCHEMA_VERSION

    path = tmp_path / "state" / "deeper" / "history.sqlite"  # both folders made
    History(tmp_path, path).close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        db.execute("PRAGMA user_version = 9")
    History(tmp_path, path).close()  # its folder there already
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 9


def test_a_diff_shows_a_last_line_without_a_line_break_on_a_line_of_its_own(history):
    write(history, "notes.md", "one\ntwo")
    write(history, "notes.md", "one\nthree")
    diff = history.diff(history.changes(OWNER, "notes.md")[0])
    assert diff.endswith("-two\n+three\n"), diff
    assert " one\n" in diff


def test_a_restore_makes_the_folders_it_needs_private_and_a_missing_version_is_said(history):
    write(history, "notes/deep/x.md", "kept\n")
    first = history.changes(OWNER, "notes/deep/x.md")[0]
    (history.workspace / "notes/deep/x.md").unlink()
    (history.workspace / "notes/deep").rmdir()
    (history.workspace / "notes").rmdir()
    history.restore(OWNER, "notes/deep/x.md", f"#{first.id}", Author("me"))
    assert (history.workspace / "notes/deep/x.md").read_text() == "kept\n"
    for folder in ("notes", "notes/deep"):
        assert stat.S_IMODE((history.workspace / folder).stat().st_mode) == 0o700
    (history.workspace / "notes").chmod(0o750)  # the owner's own choice for a folder there
    (history.workspace / "notes/deep/x.md").unlink()
    (history.workspace / "notes/deep").rmdir()
    history.restore(OWNER, "notes/deep/x.md", f"#{first.id}", Author("me"))
    assert stat.S_IMODE((history.workspace / "notes").stat().st_mode) == 0o750
    # The deletion was found and recorded before the restore; undo takes the restore back.
    whats = [c.what for c in history.changes(OWNER, "notes/deep/x.md")]
    assert whats[2:] == [f"restore to #{first.id}", "found on the next look", "write_file"]
    with pytest.raises(ToolError, match="is neither a change number nor a date and time"):
        history.restore(OWNER, "notes/deep/x.md", "last tuesday", Author("me"))
    with pytest.raises(ToolError, match="the version 0123456789ab is missing"):
        history.content("0123456789abcdef" * 4)


def test_restoring_a_deletion_of_a_file_already_gone_is_no_error(history):
    write(history, "x.md", "x\n")
    gone = history.undo(OWNER, Author("me"))  # its creation taken back: the file deleted
    deletion = history.changes(OWNER, "x.md")[0]
    assert deletion.what == f"undo of #{gone.id}" and deletion.after is None
    history.restore(OWNER, "x.md", f"#{deletion.id}", Author("me"))
    assert not (history.workspace / "x.md").exists()


def test_a_diff_keeps_the_files_own_line_breaks(history):
    write(history, "win.md", "a\r\nb\r\n")
    write(history, "win.md", "a\r\nc\r\n")
    assert history.diff(history.changes(OWNER, "win.md")[0]).endswith("-b\r\n+c\r\n")


def test_the_newest_fifty_changes_are_listed_unless_asked_for_more(history):
    for n in range(55):
        write(history, f"n{n}.md", "x\n")
    listed = history.changes(OWNER)
    assert len(listed) == 50 and [c.path for c in listed[:2]] == ["n54.md", "n53.md"]
    assert len(history.changes(OWNER, limit=55)) == 55


def test_a_closed_history_is_closed(tmp_path):
    import sqlite3

    h = History(tmp_path, tmp_path / "h.sqlite")
    h.close()
    with pytest.raises(sqlite3.ProgrammingError):
        h._db.execute("SELECT 1")

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

"""One writer of the workspace's files at a time: an entry appended to a log while a mark, a file
tool or an undo rewrites it is kept, in whichever thread or process each runs."""

from __future__ import annotations

import fcntl
import os
import threading
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from agent.memory.index import MemoryIndex
from agent.memory.links import Newer, marked
from agent.memory.proposal_store import Store
from agent.memory.store import Memory
from agent.settings import MemorySettings
from agent.tools.context import TurnContext
from agent.tools.files import atomic_write, edit_file, write_file
from agent.workspace import writers
from agent.workspace.changes import Author
from agent.workspace.history import History
from agent.workspace.writers import LOCK, held
from gateway.contract.errors import PathRefused, ToolError
from gateway.contract.events import OWNER, SessionKey
from tests.locks import until_waiting, watched

NOW = datetime(2026, 3, 12, 22, 0, tzinfo=ZoneInfo("Europe/Berlin"))
REL = "memory/2026-03-12.md"
LOG = "# 2026-03-12\n\n## 09:00\n\nCode 4711.\n\n"
ENTRY = "## 22:00\n\nBought stamps.\n\n"


@pytest.fixture
def memory(tmp_path):
    ws = (tmp_path / "ws").resolve()
    (ws / "memory").mkdir(parents=True)
    (ws / REL).write_text(LOG)
    index = MemoryIndex(tmp_path / "index.sqlite", ws)
    yield Memory(ws, index, MemorySettings(), proposals=Store(tmp_path / "proposals.json"))
    index.close()


def appending(memory: Memory) -> threading.Thread:
    writer = threading.Thread(target=memory.append, args=("Bought stamps.", NOW, OWNER))
    writer.start()
    return writer


def test_an_entry_appended_while_a_mark_rewrites_the_log_lands_in_the_new_file(memory, monkeypatch):
    path, opened, waits = memory.workspace / REL, open_files(), watched(monkeypatch)
    with held(memory.workspace):  # a mark: read the log, about to rename a new one in
        writer = appending(memory)
        until_waiting(waits, writer)
        atomic_write(path, marked(LOG, 3, Newer("2026-03-13", "08:00")))
    writer.join(timeout=10)
    assert not writer.is_alive()
    text = path.read_text()
    assert "(Out of date: replaced by the note of 2026-03-13 08:00.)" in text
    assert text.endswith(ENTRY)  # in the file that is there now
    assert open_files() == opened


def test_a_mark_holds_the_files_until_the_store_has_moved_where_consolidation_read(memory):
    shifted, seen = memory.proposals.shifted, []

    def shifting(rel: str, before: str, after: str) -> None:
        seen.append(taken(memory))  # a run reading the log now would wait
        shifted(rel, before, after)

    memory.proposals.shifted = shifting  # type: ignore[method-assign]
    memory.mark_replaced(REL, 3, Newer("2026-03-13", "08:00"))
    assert seen == [True] and "(Out of date:" in (memory.workspace / REL).read_text()
    assert not taken(memory)  # and lets go after


def test_a_mark_of_a_log_that_is_not_there_or_not_a_file_says_so(memory):
    with pytest.raises(ToolError, match=r"memory/2026-03-01\.md does not exist"):
        memory.mark_replaced("memory/2026-03-01.md", 3, Newer("2026-03-13", "08:00"))
    (memory.workspace / "memory" / "2026-03-02.md").symlink_to(memory.workspace / REL)
    with pytest.raises(ToolError, match=r"2026-03-02\.md could not be marked"):
        memory.mark_replaced("memory/2026-03-02.md", 3, Newer("2026-03-13", "08:00"))
    assert (memory.workspace / REL).read_text() == LOG


def test_the_file_tools_wait_for_a_writer_and_keep_what_it_wrote(memory, monkeypatch):
    path, waits = memory.workspace / REL, watched(monkeypatch)
    ctx = TurnContext(
        key=SessionKey("test", "private", "1"), workspace=memory.workspace, now=NOW, tz=NOW.tzinfo
    )
    edit = {"path": REL, "old_text": "Code 4711.", "new_text": "Code 4712."}
    editing = threading.Thread(target=edit_file, args=(ctx, edit))
    with held(memory.workspace):  # an entry being appended
        editing.start()
        until_waiting(waits, editing)
        with path.open("a") as log:
            log.write(ENTRY)
    editing.join(timeout=10)
    assert path.read_text() == LOG.replace("4711", "4712") + ENTRY
    waits.clear()
    writing = threading.Thread(target=write_file, args=(ctx, {"path": REL, "content": "New.\n"}))
    with held(memory.workspace):
        writing.start()
        until_waiting(waits, writing)
    writing.join(timeout=10)
    assert path.read_text() == "New.\n"


def test_memory_update_and_undo_wait_for_a_writer_and_keep_what_it_wrote(
    memory, monkeypatch, tmp_path
):
    waits, notes = watched(monkeypatch), memory.workspace / "MEMORY.md"
    notes.write_text("# Memory\n\n- Tea.\n")
    history = History(memory.workspace, tmp_path / "history.sqlite")
    memory.history = history
    updating = threading.Thread(
        target=memory.update_long_term, args=("replace", "- Coffee.", "- Tea.")
    )
    with held(memory.workspace):  # a proposal applied from the terminal, mid-write
        updating.start()
        until_waiting(waits, updating)
        notes.write_text("# Memory\n\n- Tea.\n- Oat milk.\n")
    updating.join(timeout=10)
    assert notes.read_text() == "# Memory\n\n- Coffee.\n- Oat milk.\n"
    waits.clear()
    undoing = threading.Thread(target=history.undo, args=(OWNER, Author("test")))
    with held(memory.workspace):
        undoing.start()
        until_waiting(waits, undoing)
    undoing.join(timeout=10)
    assert notes.read_text() == "# Memory\n\n- Tea.\n- Oat milk.\n"  # the update taken back
    history.close()


def test_a_writer_kept_waiting_too_long_gives_up_and_says_so(memory, monkeypatch):
    monkeypatch.setattr(writers, "WAIT", 0.05)
    opened = open_files()
    with held(memory.workspace), pytest.raises(ToolError, match="Another writer"):
        memory.append("Bought stamps.", NOW, OWNER)  # a terminal suspended mid-write
    assert (memory.workspace / REL).read_text() == LOG and open_files() == opened


def test_a_lock_removed_while_a_writer_waits_is_made_again(memory, monkeypatch):
    lock, waits = memory.workspace / LOCK, watched(monkeypatch)
    with held(memory.workspace):
        writer = appending(memory)
        until_waiting(waits, writer)
        lock.unlink()  # by hand, or by a command the assistant ran
    writer.join(timeout=10)
    assert not writer.is_alive() and lock.exists()
    assert (memory.workspace / REL).read_text() == LOG + ENTRY
    assert lock.stat().st_mode & 0o777 == 0o600


def test_a_wait_cut_short_lets_the_lock_go(memory, monkeypatch):
    def interrupted(fd: int, path: object) -> bool:
        raise KeyboardInterrupt  # as Ctrl-C in ``corvid memory apply`` while it waits

    opened = open_files()
    monkeypatch.setattr(writers, "_same", interrupted)
    with pytest.raises(KeyboardInterrupt), held(memory.workspace):
        pass
    assert open_files() == opened


def taken(memory: Memory) -> bool:
    """Whether the workspace's files are held by a writer."""
    fd = os.open(memory.workspace / LOCK, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def open_files() -> list[str]:
    return sorted(os.listdir("/proc/self/fd"))


def test_the_lock_is_no_file_for_the_tools_and_a_link_put_in_its_place_goes(memory):
    ctx = TurnContext(
        key=SessionKey("test", "private", "1"), workspace=memory.workspace, now=NOW, tz=NOW.tzinfo
    )
    with pytest.raises(PathRefused, match="off limits"):  # hidden, as every such file
        write_file(ctx, {"path": LOCK, "content": "x"})
    elsewhere = memory.workspace.parent / "elsewhere"
    elsewhere.write_text("kept")
    (memory.workspace / LOCK).symlink_to(elsewhere)  # by a command the assistant ran
    memory.append("Bought stamps.", NOW, OWNER)
    assert (memory.workspace / REL).read_text() == LOG + ENTRY
    assert not (memory.workspace / LOCK).is_symlink() and elsewhere.read_text() == "kept"
    os.unlink(memory.workspace / LOCK)
    (memory.workspace / LOCK).mkdir()  # nothing to lock: said, nothing written
    with pytest.raises(ToolError, match=r"\.writers\.lock cannot be locked"):
        memory.append("Bought stamps.", NOW, OWNER)

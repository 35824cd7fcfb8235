"""One writer of a workspace file at a time: an entry appended to a log while a mark or a file
tool rewrites it is kept, in whichever thread or process each runs."""

from __future__ import annotations

import fcntl
import os
import threading
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from agent.memory import store as store_module
from agent.memory.index import MemoryIndex
from agent.memory.links import Newer, marked
from agent.memory.store import Memory
from agent.settings import MemorySettings
from agent.tools.context import TurnContext
from agent.tools.files import atomic_write, edit_file, write_file
from agent.workspace import writers
from agent.workspace.writers import held
from gateway.contract.errors import ToolError
from gateway.contract.events import OWNER, SessionKey
from tests.locks import until_waiting

NOW = datetime(2026, 3, 12, 22, 0, tzinfo=ZoneInfo("Europe/Berlin"))
REL = "memory/2026-03-12.md"
LOG = "# 2026-03-12\n\n## 09:00\n\nCode 4711.\n\n"


@pytest.fixture
def memory(tmp_path):
    ws = (tmp_path / "ws").resolve()
    (ws / "memory").mkdir(parents=True)
    (ws / REL).write_text(LOG)
    index = MemoryIndex(tmp_path / "index.sqlite", ws)
    yield Memory(ws, index, MemorySettings())
    index.close()


def test_an_entry_appended_while_a_mark_rewrites_the_log_lands_in_the_new_file(memory):
    path = memory.workspace / REL
    done = threading.Event()

    def append() -> None:
        memory.append("Bought stamps.", NOW, OWNER)
        done.set()

    opened = open_files()
    with held(path, os.O_RDONLY):  # a mark, read the log and about to rename a new one in
        writer = threading.Thread(target=append)
        writer.start()
        until_waiting(path, writer)
        atomic_write(path, marked(LOG, 3, Newer("2026-03-13", "08:00")))
    writer.join(timeout=10)
    assert done.is_set()
    text = path.read_text()
    assert "(Out of date: replaced by the note of 2026-03-13 08:00.)" in text
    assert text.endswith("## 22:00\n\nBought stamps.\n\n")  # in the file that is there now
    assert open_files() == opened  # the file it waited on is let go too


def test_an_entry_appended_while_the_log_is_removed_starts_a_new_one(memory):
    path = memory.workspace / REL
    writer = threading.Thread(target=memory.append, args=("Bought stamps.", NOW, OWNER))
    with held(path, os.O_RDONLY):  # removed by hand while a writer waits
        writer.start()
        until_waiting(path, writer)
        path.unlink()
    writer.join(timeout=10)
    assert not writer.is_alive()
    assert path.read_text() == "# 2026-03-12\n\n## 22:00\n\nBought stamps.\n\n"
    assert path.stat().st_mode & 0o777 == 0o600  # the owner's alone, as every log


def test_a_wait_cut_short_lets_the_file_go(memory, monkeypatch):
    def interrupted(fd: int, path: object) -> bool:
        raise KeyboardInterrupt  # as Ctrl-C in ``corvid memory apply`` while it waits

    opened = open_files()
    monkeypatch.setattr(writers, "_same", interrupted)
    with pytest.raises(KeyboardInterrupt), held(memory.workspace / REL, os.O_RDONLY):
        pass
    assert open_files() == opened


def open_files() -> list[str]:
    return sorted(os.listdir("/proc/self/fd"))


def test_a_mark_holds_the_log_while_it_reads_and_rewrites_it(memory, monkeypatch):
    path = memory.workspace / REL
    seen = []

    def marking(text: str, line: int, newer: Newer) -> str:
        fd = os.open(path, os.O_RDONLY)
        try:
            with pytest.raises(BlockingIOError):  # another writer would wait here
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
        seen.append(line)
        return marked(text, line, newer)

    monkeypatch.setattr(store_module, "marked", marking)
    memory.mark_replaced(REL, 3, Newer("2026-03-13", "08:00"))
    assert seen == [3] and "(Out of date:" in path.read_text()
    with held(path, os.O_RDONLY):  # and lets it go after
        pass


def test_a_mark_of_a_log_that_is_not_there_or_not_a_file_says_so(memory):
    with pytest.raises(ToolError, match=r"memory/2026-03-01\.md does not exist"):
        memory.mark_replaced("memory/2026-03-01.md", 3, Newer("2026-03-13", "08:00"))
    (memory.workspace / "memory" / "2026-03-02.md").symlink_to(memory.workspace / REL)
    with pytest.raises(ToolError, match=r"2026-03-02\.md could not be marked"):
        memory.mark_replaced("memory/2026-03-02.md", 3, Newer("2026-03-13", "08:00"))
    assert (memory.workspace / REL).read_text() == LOG


def test_the_file_tools_wait_for_a_writer_of_the_file_and_keep_what_it_wrote(memory):
    path = memory.workspace / REL
    ctx = TurnContext(
        key=SessionKey("test", "private", "1"), workspace=memory.workspace, now=NOW, tz=NOW.tzinfo
    )
    edit = {"path": REL, "old_text": "Code 4711.", "new_text": "Code 4712."}
    editing = threading.Thread(target=edit_file, args=(ctx, edit))
    with held(path, os.O_RDWR | os.O_APPEND) as fd:  # an entry being appended
        editing.start()
        until_waiting(path, editing)
        os.write(fd, b"## 22:00\n\nBought stamps.\n\n")
    editing.join(timeout=10)
    assert path.read_text() == LOG.replace("4711", "4712") + "## 22:00\n\nBought stamps.\n\n"
    writing = threading.Thread(target=write_file, args=(ctx, {"path": REL, "content": "New.\n"}))
    with held(path, os.O_RDONLY):
        writing.start()
        until_waiting(path, writing)
    writing.join(timeout=10)
    assert path.read_text() == "New.\n"

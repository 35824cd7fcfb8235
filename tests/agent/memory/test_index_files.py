"""Which files the search index reads: Markdown files under memory/ and MEMORY.md itself,
never a link (to a file or a folder), not even a file replaced by one after it was indexed."""

from __future__ import annotations

import contextlib
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agent.memory.catchup import CatchUp
from agent.memory.index import MemoryIndex
from gateway.contract.events import OWNER


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "memory").mkdir(parents=True)
    (root / "memory" / "2026-11-01.md").write_text("## 09:00\n\npenguin parade\n")
    (root / "MEMORY.md").write_text("## Birds\n\n- penguin facts\n")
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the workspace with a note and a secret the index must never read."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    (folder / "2026-01-01.md").write_text("## 09:00\n\nwalrus, the outside secret\n")
    return folder


def found_by(idx: MemoryIndex, query: str) -> list[str]:
    return [h.path for h in idx.search(query, audience=OWNER)]


def found(ws: Path, tmp_path: Path, query: str) -> list[str]:
    idx = MemoryIndex(tmp_path / "index.sqlite", ws, chunk_size=4, overlap=1)
    try:
        return [h.path for h in idx.search(query, audience=OWNER)]
    finally:
        idx.close()


def test_markdown_under_memory_and_memory_md_are_read(ws, tmp_path):
    (ws / "memory" / "projects").mkdir()
    (ws / "memory" / "projects" / "birds.md").write_text("penguin census\n")
    assert sorted(found(ws, tmp_path, "penguin")) == [
        "MEMORY.md",
        "memory/2026-11-01.md",
        "memory/projects/birds.md",
    ]


def test_other_files_under_memory_are_not(ws, tmp_path):
    (ws / "memory" / "walrus.txt").write_text("penguin walrus\n")
    (ws / "memory" / ".draft.md").write_text("penguin walrus\n")
    os.mkfifo(ws / "memory" / "pipe.md")
    assert found(ws, tmp_path, "walrus") == []
    assert sorted(found(ws, tmp_path, "penguin")) == ["MEMORY.md", "memory/2026-11-01.md"]


@pytest.fixture
def opened(monkeypatch) -> list[str]:
    """The files the index opens, in order."""
    names: list[str] = []
    read = CatchUp._read
    monkeypatch.setattr(CatchUp, "_read", lambda self, rel: names.append(rel) or read(self, rel))
    return names


def test_a_linked_note_or_folder_under_memory_is_not_followed(ws, tmp_path, outside, opened):
    (ws / "memory" / "2026-11-02.md").symlink_to(outside / "2026-01-01.md")
    (ws / "memory" / "linked").symlink_to(outside, target_is_directory=True)
    assert found(ws, tmp_path, "walrus") == []
    assert len(found(ws, tmp_path, "penguin")) == 2
    assert sorted(opened) == ["MEMORY.md", "memory/2026-11-01.md"]  # the links: not even opened


def test_memory_md_as_a_link_is_not_followed(ws, tmp_path, outside, opened):
    (ws / "MEMORY.md").unlink()
    (ws / "MEMORY.md").symlink_to(outside / "2026-01-01.md")
    assert found(ws, tmp_path, "walrus") == []
    assert found(ws, tmp_path, "penguin") == ["memory/2026-11-01.md"]
    assert opened == ["memory/2026-11-01.md"]


def test_a_memory_folder_that_is_a_link_is_not_followed(ws, tmp_path, outside, opened):
    (ws / "memory" / "2026-11-01.md").unlink()
    (ws / "memory").rmdir()
    (ws / "memory").symlink_to(outside, target_is_directory=True)
    assert found(ws, tmp_path, "walrus") == []
    assert found(ws, tmp_path, "penguin") == ["MEMORY.md"]
    assert opened == ["MEMORY.md"]  # what lies behind the link is not even opened


def test_a_file_gone_between_the_scan_and_the_read_is_skipped(ws, tmp_path, monkeypatch):
    idx = MemoryIndex(tmp_path / "index.sqlite", ws, chunk_size=4, overlap=1)
    assert len(found_by(idx, "penguin")) == 2
    (ws / "MEMORY.md").write_text("## Birds\n\n- penguin facts, more of them\n")
    hot_files = CatchUp._hot_files

    def then_deleted(self):
        files = hot_files(self)
        (ws / "MEMORY.md").unlink()  # after its stat, before its read
        return files

    monkeypatch.setattr(CatchUp, "_hot_files", then_deleted)
    assert sorted(found_by(idx, "penguin")) == ["MEMORY.md", "memory/2026-11-01.md"]
    monkeypatch.undo()
    assert idx.sync() == 1 and found_by(idx, "penguin") == ["memory/2026-11-01.md"]
    idx.close()


def test_a_folder_replaced_by_a_link_after_it_was_indexed_is_not_followed(ws, tmp_path, outside):
    chat = ws / "memory" / "chats" / "telegram-group--5"
    chat.mkdir(parents=True)
    (chat / "2026-11-09.md").write_text("## 09:00\n\nheron note\n")  # the newest: looked at
    (outside / "2026-11-09.md").write_text("## 09:00\n\nwalrus, the outside secret again\n")
    idx = MemoryIndex(tmp_path / "index.sqlite", ws, chunk_size=4, overlap=1)
    assert found_by(idx, "heron") == ["memory/chats/telegram-group--5/2026-11-09.md"]
    chat.rename(tmp_path / "moved")
    chat.symlink_to(outside, target_is_directory=True)  # memory/ itself did not change
    assert found_by(idx, "walrus") == found_by(idx, "heron") == []
    idx.sync()
    assert found_by(idx, "walrus") == found_by(idx, "heron") == []
    assert len(found_by(idx, "penguin")) == 2
    idx.close()


def test_a_file_replaced_by_a_fifo_is_not_read_and_no_search_waits_on_it(ws, tmp_path):
    idx = MemoryIndex(tmp_path / "index.sqlite", ws, chunk_size=4, overlap=1)
    assert len(found_by(idx, "penguin")) == 2
    (ws / "MEMORY.md").unlink()
    os.mkfifo(ws / "MEMORY.md")
    searching = ThreadPoolExecutor(1)
    try:
        hits = searching.submit(found_by, idx, "penguin").result(timeout=10)
        assert hits == ["memory/2026-11-01.md"]  # what MEMORY.md said is gone with it
    finally:
        with contextlib.suppress(OSError):  # a reader stuck on the FIFO is let go
            os.close(os.open(ws / "MEMORY.md", os.O_WRONLY | os.O_NONBLOCK))
        searching.shutdown()
        idx.close()


def test_a_file_replaced_by_a_link_after_it_was_indexed_is_not_followed(ws, tmp_path, outside):
    idx = MemoryIndex(tmp_path / "index.sqlite", ws, chunk_size=4, overlap=1)
    assert len(idx.search("penguin", audience=OWNER)) == 2
    link = ws / "MEMORY.tmp"
    link.symlink_to(outside / "2026-01-01.md")
    os.replace(link, ws / "MEMORY.md")  # memory/ did not change: a quick catch-up comes next
    assert idx.search("walrus", audience=OWNER) == []
    assert found_by(idx, "penguin") == ["memory/2026-11-01.md"]  # what it said went with it
    idx.sync()
    assert idx.search("walrus", audience=OWNER) == []
    assert [h.path for h in idx.search("penguin", audience=OWNER)] == ["memory/2026-11-01.md"]
    link = ws / "memory" / "log.tmp"
    link.symlink_to(outside / "2026-01-01.md")
    os.replace(link, ws / "memory" / "2026-11-01.md")
    idx.sync()  # what the files said before they became links is gone from the index too
    assert idx.search("penguin", audience=OWNER) == idx.search("walrus", audience=OWNER) == []
    idx.close()

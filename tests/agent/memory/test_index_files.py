"""Which files the search index reads: Markdown files under memory/ and MEMORY.md itself,
never a link (to a file or a folder), not even a file replaced by one after it was indexed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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
    (ws / "memory" / "walrus.txt").write_text("walrus\n")
    (ws / "memory" / ".draft.md").write_text("walrus\n")
    assert found(ws, tmp_path, "walrus") == []


def test_a_linked_note_or_folder_under_memory_is_not_followed(ws, tmp_path, outside):
    (ws / "memory" / "2026-11-02.md").symlink_to(outside / "2026-01-01.md")
    (ws / "memory" / "linked").symlink_to(outside, target_is_directory=True)
    assert found(ws, tmp_path, "walrus") == []


def test_memory_md_as_a_link_is_not_followed(ws, tmp_path, outside):
    (ws / "MEMORY.md").unlink()
    (ws / "MEMORY.md").symlink_to(outside / "2026-01-01.md")
    assert found(ws, tmp_path, "walrus") == []


def test_a_file_replaced_by_a_link_after_it_was_indexed_is_not_followed(ws, tmp_path, outside):
    idx = MemoryIndex(tmp_path / "index.sqlite", ws, chunk_size=4, overlap=1)
    assert len(idx.search("penguin", audience=OWNER)) == 2
    link = ws / "MEMORY.tmp"
    link.symlink_to(outside / "2026-01-01.md")
    os.replace(link, ws / "MEMORY.md")  # memory/ did not change: a quick catch-up comes next
    assert idx.search("walrus", audience=OWNER) == []
    idx.sync()
    assert idx.search("walrus", audience=OWNER) == []
    assert [h.path for h in idx.search("penguin", audience=OWNER)] == ["memory/2026-11-01.md"]
    link = ws / "memory" / "log.tmp"
    link.symlink_to(outside / "2026-01-01.md")
    os.replace(link, ws / "memory" / "2026-11-01.md")
    idx.sync()  # what the files said before they became links is gone from the index too
    assert idx.search("penguin", audience=OWNER) == idx.search("walrus", audience=OWNER) == []
    idx.close()

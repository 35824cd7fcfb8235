"""How the index cuts memory files: at their notes (a log's entries, MEMORY.md's sections and
list items), a long note into windows, with the lines of each chunk in its file."""

from __future__ import annotations

from agent.memory.index import MemoryIndex
from agent.memory.text import chunk_entries, chunk_lines
from gateway.contract.events import OWNER

LOG = """# 2026-03-12

## 09:00

Ran 8 km along the canal.

## 12:30 · telegram:group:-100

Lunch with Priya: the roadmap slips a quarter.
She asks for the estimate by Friday.
"""

LONG_TERM = """# Long-term memory

## People

- Anna: my sister, lives in Lisbon.
- Tom: my partner,
  teaches physics.

## Car

Grey Škoda, plate B-MK 2291.
"""


def test_a_log_is_cut_at_its_entries_and_the_day_heading_joins_the_first():
    assert chunk_entries(LOG, 30, 6) == [
        (1, 5, "# 2026-03-12\n\n## 09:00\n\nRan 8 km along the canal."),
        (7, 10, "## 12:30 · telegram:group:-100\n\nLunch with Priya: the roadmap slips a "
                "quarter.\nShe asks for the estimate by Friday."),
    ]  # fmt: skip


def test_memory_md_is_cut_at_sections_and_list_items():
    assert [(a, b) for a, b, _ in chunk_entries(LONG_TERM, 30, 6)] == [(1, 5), (6, 7), (9, 11)]
    tom = chunk_entries(LONG_TERM, 30, 6)[1][2]
    assert tom == "- Tom: my partner,\n  teaches physics."


def test_a_long_note_is_cut_into_windows_and_plain_text_as_before():
    long = "## 08:00\n\n" + "\n".join(f"line {n}" for n in range(1, 21)) + "\n"
    windows = chunk_entries(long, 8, 2)
    assert [(a, b) for a, b, _ in windows] == [(1, 8), (7, 14), (13, 20), (19, 22)]
    assert windows[1][2].splitlines()[0] == "line 5"  # the file's line 7
    plain = "\n".join(f"words {n}" for n in range(12))
    assert chunk_entries(plain, 5, 1) == chunk_lines(plain, 5, 1)
    assert chunk_entries("", 5, 1) == [] and chunk_entries("# Only a title\n", 5, 1) == [
        (1, 1, "# Only a title")
    ]


def test_a_hit_points_at_its_own_note(tmp_path):
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "2026-03-12.md").write_text(LOG)
    (ws / "MEMORY.md").write_text(LONG_TERM)
    idx = MemoryIndex(tmp_path / "index.sqlite", ws)
    try:
        [hit] = idx.search("estimate", 5, audience=OWNER)
        assert (hit.path, hit.start_line, hit.end_line) == ("memory/2026-03-12.md", 7, 10)
        [tom] = idx.search("physics", 5, audience=OWNER)
        assert (tom.path, tom.start_line, tom.end_line) == ("MEMORY.md", 6, 7)
    finally:
        idx.close()

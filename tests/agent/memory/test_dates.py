"""When the lines of MEMORY.md were written, from the workspace history: a line keeps the date
of the version that brought it, a line from before the history has none, a hand edit not yet
recorded takes the file's modification day; and search hits carry those dates."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from agent.memory.dates import HistoryDates, carried
from agent.memory.index import MemoryIndex
from agent.workspace.history import History
from gateway.contract.events import OWNER

TZ = ZoneInfo("Europe/Berlin")


def test_a_line_kept_keeps_its_date_and_a_changed_one_takes_the_new_versions():
    v1 = carried([], ["# People", "- Anna: Porto", "- Tom: physics"], "2026-01-10")
    assert [d for _, d in v1] == ["2026-01-10"] * 3
    v2 = carried(v1, ["# People", "- Anna: Lisbon", "- Tom: physics", "- Kenji"], "2026-09-12")
    assert [d for _, d in v2] == ["2026-01-10", "2026-09-12", "2026-01-10", "2026-09-12"]
    v3 = carried(v2, ["- Kenji", "# People", "- Tom: physics"], "2026-10-01")  # reordered
    assert [d for _, d in v3] == ["2026-10-01", "2026-01-10", "2026-01-10"]


def _mtime(path: Path, when: datetime) -> int:
    os.utime(path, (when.timestamp(), when.timestamp()))
    return path.stat().st_mtime_ns


def test_the_history_dates_each_line_of_memory_md(tmp_path):
    ws, db = tmp_path / "ws", tmp_path / "state" / "history.sqlite"
    ws.mkdir()
    notes = ws / "MEMORY.md"
    notes.write_text("- from before the history\n")
    dates = HistoryDates(ws, db, TZ)
    text = notes.read_text()
    assert dates("MEMORY.md", text, notes.stat().st_mtime_ns) == [""]  # no history at all
    history = History(ws, db)
    try:
        with history.recording(notes):
            notes.write_text("- from before the history\n- Anna lives in Lisbon\n")
        with history.recording(notes):
            notes.write_text("- from before the history\n- Anna lives in Lisbon\n- Tom: cello\n")
        first, second = reversed(history.changes(OWNER, "MEMORY.md"))
    finally:
        history.close()
    day = [c.at.astimezone(TZ).date().isoformat() for c in (first, second)]
    # Edited by hand since: the new line is dated by the file, the rest by the history.
    notes.write_text(notes.read_text() + "- Biscuit: vet on Tuesday\n")
    mtime = _mtime(notes, datetime(2026, 12, 24, 10, 0, tzinfo=TZ))
    assert dates("MEMORY.md", notes.read_text(), mtime) == ["", day[0], day[1], "2026-12-24"]
    # A version recorded later is followed from where the last look stopped.
    history = History(ws, db)
    try:
        with history.recording(notes):
            notes.write_text("- Anna lives in Lisbon\n- Tom: cello\n")
        [third, *_] = history.changes(OWNER, "MEMORY.md")
    finally:
        history.close()
    assert third.id > second.id
    assert dates("MEMORY.md", notes.read_text(), notes.stat().st_mtime_ns) == [day[0], day[1]]


def test_search_hits_carry_the_day_their_note_was_written(tmp_path):
    ws, state = tmp_path / "ws", tmp_path / "state"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "2025-03-14.md").write_text("## 09:00\n\nPassport renewed.\n")
    notes = ws / "MEMORY.md"
    notes.write_text("- Passport number X1234567\n")
    history = History(ws, state / "history.sqlite")
    try:
        with history.recording(notes):
            notes.write_text(
                "- Passport number X1234567\n\n- Passport photo: booth at the station\n"
            )
        [change] = history.changes(OWNER, "MEMORY.md")
    finally:
        history.close()
    dates = HistoryDates(ws, state / "history.sqlite", TZ)
    index = MemoryIndex(state / "index.sqlite", ws, dates=dates)
    try:
        hits = {(h.path, h.start_line): h.written for h in index.search("passport", audience=OWNER)}
    finally:
        index.close()
    assert hits == {
        ("memory/2025-03-14.md", 1): "2025-03-14",
        ("MEMORY.md", 1): "",
        ("MEMORY.md", 3): change.at.astimezone(TZ).date().isoformat(),
    }

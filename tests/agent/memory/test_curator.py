"""The curator of consolidation's proposals, without the gateway: who has one, an audience with
no notes of its own, and the preview: its word on the file's budget, and every file it changes."""

from __future__ import annotations

import fcntl
import json
import os
from dataclasses import replace
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from agent.memory.consolidation import Curator, line_at
from agent.memory.index import MemoryIndex
from agent.memory.links import Newer
from agent.memory.proposal_store import Store
from agent.memory.proposals import Item, Proposal, digest
from agent.memory.store import Memory
from agent.model.port import LLMResponse
from agent.sessions.state import Usage
from agent.settings import MemorySettings
from agent.workspace.writers import LOCK
from gateway.contract.events import OWNER, Audience

NOW = datetime(2026, 3, 12, 22, 0, tzinfo=ZoneInfo("Europe/Berlin"))
BUDGET = 500


@pytest.fixture
def memory(tmp_path):
    ws = (tmp_path / "ws").resolve()
    (ws / "memory").mkdir(parents=True)
    index = MemoryIndex(tmp_path / "index.sqlite", ws)
    store = Store(tmp_path / "state" / "proposals.json")
    yield Memory(ws, index, MemorySettings(long_term_max_chars=BUDGET), proposals=store)
    index.close()


class NoModel:
    """A model that must not be asked."""

    async def complete(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the model was asked")


def test_only_a_memory_that_keeps_proposals_has_a_curator(memory, tmp_path):
    assert Curator.of(None) is None
    without = Memory(memory.workspace, memory.index, memory.cfg)
    assert Curator.of(without) is None
    curator = Curator.of(memory)
    assert curator is not None and curator.store is memory.proposals


async def test_a_job_that_posts_to_no_chat_has_no_notes_to_propose_for(memory):
    folder = memory.workspace / "memory" / "chats" / "cron-nightly"
    folder.mkdir(parents=True)
    (folder / "2026-03-12.md").write_text("# 2026-03-12\n\n## 10:00\n\nA job's own words.\n")
    curator = Curator.of(memory)
    assert curator is not None and curator.chats() == []
    outcome = await curator.propose(NoModel(), NOW, Audience("cron-nightly"))
    assert (outcome.proposal, outcome.chars_in) == (None, 0)
    assert curator.store.marks() == {}


@pytest.mark.parametrize(("size", "over"), [(BUDGET, False), (BUDGET + 1, True)])
def test_the_preview_says_when_the_file_would_pass_its_budget(memory, size, over):
    current = "# Memory\n"
    text = "- " + "x" * (size - len("# Memory\n\n- \n"))  # added after a blank line
    item = Item("add", text, (), "r", ())
    proposal = Proposal("p1", NOW.isoformat(), digest(current), (item,), {})
    (memory.workspace / "MEMORY.md").write_text(current)
    curator = Curator.of(memory)
    assert curator is not None
    shown = curator.preview(proposal)
    note = f"(MEMORY.md would have {size} characters, over its budget of {BUDGET}"
    assert shown.startswith(note) == over and "+- xxx" in shown


def test_the_preview_shows_each_file_a_proposal_changes_and_a_mark_it_cannot_make(memory):
    current = "# Memory\n"
    (memory.workspace / "MEMORY.md").write_text(current)
    logs = memory.workspace / "memory"
    (logs / "2026-01-10.md").write_text("# 2026-01-10\n\n## 09:00\n\nDoor code 4711.\n")
    (logs / "2026-03-12.md").write_text("# 2026-03-12\n\n## 18:00\n\nDoor code 0815.\n")
    add = Item("add", "- Door code 0815.", (), "r", ())
    mark = Item(
        "replaces",
        "Door code 0815.",
        (),
        "a new code",
        ("memory/2026-03-12.md:3",),
        replaces="memory/2026-01-10.md:3",
        was="Door code 4711.",
    )
    stale = replace(mark, replaces="memory/2026-01-10.md:9")
    proposal = Proposal("p1", NOW.isoformat(), digest(current), (add, mark, stale), {})
    curator = Curator.of(memory)
    assert curator is not None
    shown = curator.preview(proposal)
    assert shown.startswith("--- MEMORY.md now\n") and "+- Door code 0815.\n" in shown
    assert (
        "--- memory/2026-01-10.md now\n+++ memory/2026-01-10.md proposed\n" in shown
        and "+(Out of date: replaced by the note of 2026-03-12 18:00.)\n" in shown
    )
    assert shown.endswith(
        "(memory/2026-01-10.md:9 cannot be marked: the log has 5 lines; line 9 is not in it.)\n"
    )
    marks_only = replace(proposal, items=(mark,))
    assert curator.preview(marks_only).startswith("--- memory/2026-01-10.md now\n")


def test_a_log_read_on_from_the_middle_is_numbered_as_its_readers_number_its_lines(memory):
    curator = Curator.of(memory)
    assert curator is not None
    log = memory.workspace / "memory" / "2026-03-12.md"
    before = "# 2026-03-12\n\n## 09:00\n\nA form feed\f and a line separator\u2028here.\n\n"
    log.write_text(before + "## 18:00\n\nThe new entry.\n")
    memory.proposals.set_marks({"memory/2026-03-12.md": len(before.encode())})
    reading = curator.read(NOW.date())
    [(rel, line)] = reading.entries()
    assert rel == "memory/2026-03-12.md"
    assert log.read_text().splitlines()[line - 1] == "## 18:00"
    assert f"{line}| ## 18:00" in reading.numbered()
    # Read up to the middle of a line (a log that had no line break at its end): the rest of
    # that line is the first one read.
    assert [line_at(b"a\nbc", n) for n in (0, 1, 2, 3, 4)] == [1, 1, 2, 2, 2]
    assert line_at(b"a\r\nb", 3) == 2


class MarkingModel:
    """A model that answers ``answer``; while it is asked, a conversation marks a note."""

    def __init__(self, answer: dict, meanwhile: Any) -> None:
        self.answer, self.meanwhile = answer, meanwhile

    async def complete(self, *args: Any, **kwargs: Any) -> LLMResponse:
        self.meanwhile()
        text = json.dumps(self.answer)
        return LLMResponse([{"type": "text", "text": text}], "end_turn", Usage())


async def test_a_note_marked_while_the_model_is_asked_moves_where_the_run_read_to(memory):
    curator = Curator.of(memory)
    assert curator is not None
    folder = memory.workspace / "memory"
    old, today = folder / "2026-03-11.md", folder / "2026-03-12.md"
    old.write_text("# 2026-03-11\n\n## 09:00\n\nCode 4711.\n\n")
    today.write_text("# 2026-03-12\n\n## 09:00\n\nCode 0815.\n\n")
    memory.proposals.set_marks({"memory/2026-03-11.md": old.stat().st_size})
    old.write_text(old.read_text() + "## 20:00\n\nBought stamps.\n\n")  # read on from there

    # ``corvid memory apply`` in a terminal: another process, with a store of its own.
    terminal = Memory(
        memory.workspace, memory.index, memory.cfg, proposals=Store(memory.proposals.path)
    )

    def marks() -> None:  # both the part read before and the new part gain a line
        terminal.mark_replaced("memory/2026-03-11.md", 3, Newer("2026-03-12", "09:00"))
        memory.mark_replaced("memory/2026-03-12.md", 3, Newer("2026-03-12", "09:00"))

    start = old.stat().st_size - len("## 20:00\n\nBought stamps.\n\n")
    answer = {"changes": [{"op": "add", "text": "- Stamps.", "reason": "r", "sources": []}]}
    outcome = await curator.propose(MarkingModel(answer, marks), NOW)
    assert outcome.proposal is not None
    mark = len("(Out of date: replaced by the note of 2026-03-12 09:00.)")
    # Read to the end of each log as it is now; a refusal would read again from before the new
    # part, as it is now.
    assert curator.store.marks() == {
        "memory/2026-03-11.md": old.stat().st_size,
        "memory/2026-03-12.md": today.stat().st_size,
    }
    assert outcome.proposal.marks_before == {
        "memory/2026-03-11.md": start + mark,
        "memory/2026-03-12.md": 0,
    }
    assert memory.proposals.places()[1] == 2  # two marks written so far
    assert (await curator.propose(NoModel(), NOW)).proposal is None  # nothing new


def test_a_mark_made_as_a_run_starts_is_not_read_as_new_text(memory, monkeypatch):
    curator = Curator.of(memory)
    assert curator is not None
    log = memory.workspace / "memory" / "2026-03-11.md"
    log.write_text("# 2026-03-11\n\n## 09:00\n\nCode 4711.\n\n")
    memory.proposals.set_marks({"memory/2026-03-11.md": log.stat().st_size})
    log.write_text(log.read_text() + "## 20:00\n\nBought stamps.\n\n")
    loaded = memory.proposals.marks

    def loaded_then_marked() -> dict[str, int]:  # the marks loaded, then a note is marked
        found = loaded()
        monkeypatch.setattr(memory.proposals, "marks", loaded)
        memory.mark_replaced("memory/2026-03-11.md", 3, Newer("2026-03-12", "09:00"))
        return found

    monkeypatch.setattr(memory.proposals, "marks", loaded_then_marked)
    reading = curator.read(NOW.date())
    assert reading.logs == {"memory/2026-03-11.md": "## 20:00\n\nBought stamps.\n\n"}


def test_a_run_reads_its_logs_holding_the_workspace_files(memory, monkeypatch):
    curator = Curator.of(memory)
    assert curator is not None
    folder = memory.workspace / "memory"
    (folder / "2026-03-11.md").write_text("# 2026-03-11\n\n## 09:00\n\nCode 4711.\n\n")
    (folder / "2026-03-12.md").write_text("# 2026-03-12\n\n## 09:00\n\nCode 0815.\n\n")
    reads, held = curator._read_log, []

    def read_log(reading: Any, rel: str, *args: Any) -> None:
        fd = os.open(memory.workspace / LOCK, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held.append((rel, False))
        except BlockingIOError:  # a mark, an append would wait here
            held.append((rel, True))
        finally:
            os.close(fd)
        reads(reading, rel, *args)

    monkeypatch.setattr(curator, "_read_log", read_log)
    reading = curator.read(NOW.date())
    assert held == [("memory/2026-03-11.md", True), ("memory/2026-03-12.md", True)]
    assert list(reading.logs) == ["memory/2026-03-11.md", "memory/2026-03-12.md"]


def test_a_log_never_read_is_read_from_its_first_byte(memory):
    curator = Curator.of(memory)
    assert curator is not None
    (memory.workspace / "memory" / "2026-03-12.md").write_text("x")  # one byte, by hand
    assert curator.read(NOW.date()).logs == {"memory/2026-03-12.md": "x"}


@pytest.mark.parametrize("appended", [False, True])
def test_a_mark_at_the_end_of_a_log_read_is_not_read_again_as_new(memory, appended):
    curator = Curator.of(memory)
    assert curator is not None
    log = memory.workspace / "memory" / "2026-03-12.md"
    log.write_text("# 2026-03-12\n\n## 09:00\n\nCode 4711.")  # by hand: no line break at its end
    memory.proposals.set_marks({"memory/2026-03-12.md": log.stat().st_size})
    if appended:  # the entry starts with the line breaks the log lacked
        memory.append("Bought stamps.", NOW, OWNER)
    memory.mark_replaced("memory/2026-03-12.md", 3, Newer("2026-03-13", "08:00"))
    assert (
        "Code 4711.\n(Out of date: replaced by the note of 2026-03-13 08:00.)\n" in log.read_text()
    )
    new = curator.read(NOW.date()).logs.get("memory/2026-03-12.md", "")
    assert new.strip() == ("## 22:00\n\nBought stamps." if appended else "")

"""The curator of consolidation's proposals, without the gateway: who has one, an audience with
no notes of its own, and the preview's word on the file's budget."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from agent.memory.consolidation import Curator
from agent.memory.index import MemoryIndex
from agent.memory.proposals import Item, Proposal, Store, digest
from agent.memory.store import Memory
from agent.settings import MemorySettings
from gateway.contract.events import Audience

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

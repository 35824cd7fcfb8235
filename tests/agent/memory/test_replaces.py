"""A log entry that says it replaces an older one: the older is marked out of date in its file,
and search puts the newer above it, though they share no word."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from agent.memory.hybrid import HybridSearch
from agent.memory.index import MemoryIndex
from agent.memory.links import marked, reference, replaced_by
from agent.memory.store import Memory
from agent.memory.tools import memory_tools
from agent.settings import MemorySettings
from agent.tools.context import TurnContext
from agent.tools.registry import ToolRegistry
from agent.workspace.audience import log_path
from gateway.contract.errors import ToolError
from gateway.contract.events import SessionKey

OWNER_DM = SessionKey("test", "private", "1")
GROUP = SessionKey("test", "group", "2")
TZ = ZoneInfo("Europe/Berlin")
NOW = datetime(2026, 11, 21, 14, 30, tzinfo=TZ)
OLD_LOG = "# 2026-02-25\n\n## 09:20\n\nBike lock code is 4812.\n\n## 18:00\n\nPasta for dinner.\n"


@pytest.fixture
def memory(tmp_path):
    ws = (tmp_path / "ws").resolve()
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "2026-02-25.md").write_text(OLD_LOG)
    idx = MemoryIndex(tmp_path / "index.sqlite", ws)
    search = HybridSearch(idx, None, MemorySettings().search, lambda: NOW.date())
    yield Memory(ws, idx, MemorySettings(), search=search)
    idx.close()


async def call(memory: Memory, name: str, ctx: TurnContext | None = None, **args):
    ctx = ctx or TurnContext(key=OWNER_DM, workspace=memory.workspace, now=NOW, tz=TZ)
    result = await ToolRegistry(memory_tools(memory)).call(name, args, ctx)
    return result.is_error, result.text


def test_a_note_is_named_as_search_shows_it():
    assert reference("memory/2026-02-25.md lines 3-5") == ("memory/2026-02-25.md", 3)
    assert reference("memory/2026-02-25.md line 4") == ("memory/2026-02-25.md", 4)
    assert reference("memory/2026-02-25.md:5") == ("memory/2026-02-25.md", 5)
    with pytest.raises(ToolError, match="as memory_search shows it"):
        reference("the bike lock note")


def test_the_mark_goes_at_the_end_of_the_entry_and_a_later_one_takes_its_place():
    once = marked(OLD_LOG, 5, "2026-09-20", "14:05")
    assert once == (
        "# 2026-02-25\n\n## 09:20\n\nBike lock code is 4812.\n\n"
        "(Out of date: replaced by the note of 2026-09-20 14:05.)\n\n"
        "## 18:00\n\nPasta for dinner.\n"
    )
    twice = marked(once, 3, "2026-10-01", "08:00")  # the heading's line names it too
    assert twice.count("Out of date") == 1
    assert replaced_by(twice) == ("2026-10-01", "08:00")
    assert marked(OLD_LOG, 1, "2026-10-01", "08:00") == marked(OLD_LOG, 3, "2026-10-01", "08:00")
    last = marked(OLD_LOG, 9, "2026-09-20", "14:05")  # the last entry
    assert last.endswith(
        "Pasta for dinner.\n\n(Out of date: replaced by the note of 2026-09-20 14:05.)\n"
    )
    with pytest.raises(ToolError, match="not inside a log entry"):
        marked("# 2026-02-25\n\nno entry\n", 1, "2026-09-20", "14:05")
    with pytest.raises(ToolError, match="line 40 is not in it"):
        marked(OLD_LOG, 40, "2026-09-20", "14:05")


async def test_the_newer_note_ranks_above_the_one_it_replaces_though_they_share_no_word(memory):
    error, found = await call(memory, "memory_search", query="bike lock code")
    assert not error and found.splitlines()[0].startswith("1. memory/2026-02-25.md lines 1-5")
    error, said = await call(
        memory,
        "memory_append",
        text="The one at the station takes 7305 now.",
        replaces="memory/2026-02-25.md lines 3-5",
    )
    assert not error, said
    today = "memory/2026-11-21.md"
    assert said == (
        f"Appended to {today}; the note at memory/2026-02-25.md line 3 is marked out of date."
    )
    log = (memory.workspace / "memory" / "2026-02-25.md").read_text()
    assert (
        "Bike lock code is 4812.\n\n(Out of date: replaced by the note of 2026-11-21 14:30.)\n"
        in log
    )
    assert "Pasta for dinner." in log  # the rest of the log as it was
    error, found = await call(memory, "memory_search", query="bike lock code")
    first, second = [line for line in found.splitlines() if line[:2] in ("1.", "2.")]
    assert first.startswith(f"1. {today} lines 1-5"), found
    assert (
        second.startswith("2. memory/2026-02-25.md")
        and f"a newer note on this: {today}:1" in second
    )


async def test_a_chain_of_replacements_is_followed_to_the_newest(memory):
    ctx = TurnContext(key=OWNER_DM, workspace=memory.workspace, now=NOW, tz=TZ)
    await call(
        memory, "memory_append", ctx, text="Station lock: 7305.", replaces="memory/2026-02-25.md:5"
    )
    later = TurnContext(key=OWNER_DM, workspace=memory.workspace, now=NOW.replace(hour=16), tz=TZ)
    error, said = await call(
        memory,
        "memory_append",
        later,
        text="Swapped again, 1199.",
        replaces="memory/2026-11-21.md lines 1-5",
    )
    assert not error, said
    error, found = await call(memory, "memory_search", query="bike lock code")
    order = [line.split()[1:4] for line in found.splitlines() if line[:2] in ("1.", "2.", "3.")]
    assert order == [
        ["memory/2026-11-21.md", "lines", "9-11"],
        ["memory/2026-11-21.md", "lines", "1-7"],
        ["memory/2026-02-25.md", "lines", "1-7"],
    ], found


async def test_only_an_entry_of_the_chats_own_logs_can_be_replaced(memory):
    ws = memory.workspace
    error, said = await call(memory, "memory_append", text="x", replaces="MEMORY.md:1")
    assert error and "memory_update" in said
    group = TurnContext(key=GROUP, workspace=ws, now=NOW, tz=TZ)
    error, said = await call(
        memory, "memory_append", group, text="new code 1", replaces="memory/2026-02-25.md:5"
    )
    assert error and "only available in private chats" in said
    group_log = ws / log_path(group.audience, NOW.date().replace(day=1))
    group_log.parent.mkdir(parents=True)
    group_log.write_text("# 2026-11-01\n\n## 10:00\n\nThe group's bin day is Tuesday.\n")
    named = f"{group_log.relative_to(ws)}:5"
    error, said = await call(memory, "memory_append", text="code 1", replaces=named)
    assert error and "this chat's own daily logs" in said  # the owner's chat, a group's log
    error, said = await call(memory, "memory_append", group, text="Now Wednesday.", replaces=named)
    assert not error and "is marked out of date" in said
    assert group_log.read_text().endswith(
        "(Out of date: replaced by the note of 2026-11-21 14:30.)\n"
    )
    group_log.unlink()
    (ws / log_path(group.audience, NOW.date())).unlink()
    error, said = await call(memory, "memory_append", text="x", replaces="memory/2026-03-01.md:5")
    assert error and "does not exist" in said
    (ws / "memory" / "2026-03-02.md").write_text("# 2026-03-02\n\nno entry under a heading\n")
    error, said = await call(memory, "memory_append", text="x", replaces="memory/2026-03-02.md:3")
    assert error and "not inside a log entry" in said
    error, said = await call(memory, "memory_append", text="x", replaces="../outside.md:1")
    assert error
    assert (ws / "memory" / "2026-02-25.md").read_text() == OLD_LOG
    assert not (ws / "memory" / "2026-11-21.md").exists()  # refused before anything is written


async def test_a_turn_that_read_text_from_outside_cannot_mark_a_note_out_of_date(memory):
    ctx = TurnContext(key=OWNER_DM, workspace=memory.workspace, now=NOW, tz=TZ)
    ctx.saw("a web page")
    error, said = await call(
        memory, "memory_append", ctx, text="code is 0000", replaces="memory/2026-02-25.md:5"
    )
    assert error and "read text from outside" in said
    assert (memory.workspace / "memory" / "2026-02-25.md").read_text() == OLD_LOG


async def test_a_mark_that_points_back_in_time_or_nowhere_is_not_followed(memory):
    log = memory.workspace / "memory" / "2026-02-25.md"
    log.write_text(
        OLD_LOG.replace(
            "4812.\n", "4812.\n\n(Out of date: replaced by the note of 2025-01-01 10:00.)\n"
        )
    )
    (memory.workspace / "memory" / "2025-01-01.md").write_text(
        "# 2025-01-01\n\n## 10:00\n\nan older code 1111\n"
    )
    error, found = await call(memory, "memory_search", query="bike lock code")
    assert found.splitlines()[0].startswith("1. memory/2026-02-25.md"), found
    assert "newer note" not in found
    log.write_text(
        OLD_LOG.replace(
            "4812.\n", "4812.\n\n(Out of date: replaced by the note of 2026-09-09 10:00.)\n"
        )
    )
    error, found = await call(memory, "memory_search", query="bike lock code")
    assert not error and found.splitlines()[0].startswith("1. memory/2026-02-25.md"), found

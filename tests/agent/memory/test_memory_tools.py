"""The memory tools' own rules, called as the model calls them: what each accepts, how much it
returns, and what it says when it refuses or finds nothing."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from agent.memory.hits import Hit
from agent.memory.hybrid import HybridSearch
from agent.memory.index import MemoryIndex
from agent.memory.store import Memory
from agent.memory.tools import MAX_ENTRY_CHARS, MAX_QUERY_CHARS, memory_tools, why
from agent.settings import MemorySettings
from agent.tools.context import TurnContext
from agent.tools.registry import ToolRegistry
from gateway.contract.events import SessionKey

PRIVATE = SessionKey("test", "private", "1")
GROUP = SessionKey("test", "group", "2")
TZ = ZoneInfo("Europe/Berlin")
NOW = datetime(2026, 11, 21, 14, 30, tzinfo=TZ)


@pytest.fixture
def memory(tmp_path):
    ws = (tmp_path / "ws").resolve()
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Long-term\n\n- prefers tea\n")
    lines = "".join(f"line {i}\n" for i in range(1, 1201))
    (ws / "memory" / "2026-11-01.md").write_text(lines)
    idx = MemoryIndex(tmp_path / "index.sqlite", ws)
    yield Memory(ws, idx, MemorySettings())
    idx.close()


async def call(memory: Memory, name: str, key: SessionKey = PRIVATE, **args):
    ctx = TurnContext(key=key, workspace=memory.workspace, now=NOW, tz=TZ)
    result = await ToolRegistry(memory_tools(memory)).call(name, args, ctx)
    return result.is_error, result.text


async def test_a_search_needs_a_short_query_and_says_when_nothing_matches(memory):
    assert await call(memory, "memory_search", query="   ") == (True, "query must not be empty.")
    too_long = "query is too long; use a few keywords (at most 1000)."
    assert MAX_QUERY_CHARS == 1000
    assert await call(memory, "memory_search", query="q" * 1001) == (True, too_long)
    longest = await call(memory, "memory_search", query="q" * 1000)
    assert longest == (False, "Nothing in memory matches that query.")


async def test_a_search_returns_between_one_and_fifty_hits_numbered_from_one(memory):
    for day in range(1, 61):
        (memory.workspace / "memory" / f"2026-09-{day % 30 + 1:02d}-{day}.md").write_text(
            f"## 09:00\n\nbicycle note {day}\n"
        )
    for wanted, count in ((0, 1), (3, 3), (500, 50)):
        error, text = await call(memory, "memory_search", query="bicycle", max_results=wanted)
        numbers = [line.split(".", 1)[0] for line in text.splitlines() if line[:1].isdigit()]
        assert not error and numbers == [str(n) for n in range(1, count + 1)], (wanted, text)


async def test_a_groups_search_of_its_own_log_is_not_marked_as_someone_elses(memory):
    (memory.workspace / "memory" / "chats" / "test-group-2").mkdir(parents=True)
    (memory.workspace / "memory" / "chats" / "test-group-2" / "2026-11-21.md").write_text(
        "## 10:00 · test:group:2\n\nthe picnic is on Sunday\n"
    )
    error, own = await call(memory, "memory_search", GROUP, query="picnic")
    assert not error and "picnic" in own and "written in the shared chat" not in own
    error, owners = await call(memory, "memory_search", query="picnic")
    assert "written in the shared chat test-group-2" in owners and "<untrusted" in owners


@pytest.mark.parametrize(
    ("args", "header", "first", "count"),
    [
        ({"from": 2, "lines": 2}, "[memory/2026-11-01.md: lines 2-3 of 1200]", 2, 2),
        ({"from": 0, "lines": 1}, "[memory/2026-11-01.md: lines 1-1 of 1200]", 1, 1),
        ({"from": 5, "lines": 0}, "[memory/2026-11-01.md: lines 5-5 of 1200]", 5, 1),
        ({}, "[memory/2026-11-01.md: lines 1-200 of 1200]", 1, 200),
        ({"lines": 5000}, "[memory/2026-11-01.md: lines 1-1000 of 1200]", 1, 1000),
        ({"from": 1199, "lines": 10}, "[memory/2026-11-01.md: lines 1199-1200 of 1200]", 1199, 2),
    ],
)
async def test_memory_get_reads_a_window_of_at_most_a_thousand_lines(
    memory, args, header, first, count
):
    error, text = await call(memory, "memory_get", path="memory/2026-11-01.md", **args)
    assert not error
    head, *body = text.splitlines()
    assert head == header
    assert body == [f"line {i}" for i in range(first, first + count)]


async def test_memory_get_names_a_file_that_is_not_there(memory):
    assert await call(memory, "memory_get", path="memory/2026-01-01.md") == (
        True,
        "'memory/2026-01-01.md' does not exist.",
    )


async def test_a_guests_notes_stay_in_their_chat_when_the_owner_is_kept_out(tmp_path):
    ws = (tmp_path / "ws").resolve()
    notes = ws / "memory" / "chats" / "test-guest-7" / "NOTES.md"
    notes.parent.mkdir(parents=True)
    notes.write_text("- likes jazz\n")
    idx = MemoryIndex(tmp_path / "index.sqlite", ws)
    memory = Memory(ws, idx, MemorySettings(owner_reads_guest_notes=False))
    try:
        assert await call(memory, "memory_get", path="memory/chats/test-guest-7/NOTES.md") == (
            True,
            "A guest's notes are read in their own chat only (a setting).",
        )
    finally:
        idx.close()


async def test_an_entry_is_not_empty_nor_too_long_nor_there_already(memory):
    assert await call(memory, "memory_append", text=" \n") == (True, "text must not be empty.")
    too_long = "An entry may have at most 8000 characters."
    assert MAX_ENTRY_CHARS == 8000
    assert await call(memory, "memory_append", text="x" * 8001) == (True, too_long)
    assert await call(memory, "memory_append", text="y" * 8000) == (
        False,
        "Appended to memory/2026-11-21.md.",
    )
    assert await call(memory, "memory_append", text="y" * 8000) == (
        False,
        "That is already in memory/2026-11-21.md word for word; nothing was added.",
    )


def hit(**scores) -> Hit:
    return Hit("memory/2026-11-21.md", 1, 3, 0.8123, "text", **scores)


@pytest.mark.parametrize(
    ("scores", "shown"),
    [
        ({}, "score 0.8123"),  # keyword search alone
        ({"text_score": 1.0, "vector_score": None}, "score 0.81: text 1.00, no vector yet"),
        ({"text_score": 0.5, "vector_score": 0.71, "recency": 0.5},
         "score 0.81: text 0.50, vector 0.71, age ×0.50"),
        ({"text_score": 0.5, "vector_score": 0.71, "recency": 1.0},
         "score 0.81: text 0.50, vector 0.71"),  # no decay: not shown
        ({"text_score": 0.5, "vector_score": 0.71, "recency": None},
         "score 0.81: text 0.50, vector 0.71"),  # MEMORY.md: no age
    ],
)  # fmt: skip
def test_each_hit_says_why_it_ranked(scores, shown):
    assert why(hit(**scores)) == shown


async def test_a_job_that_posts_to_no_chat_has_no_notes_to_update(memory):
    job = SessionKey.parse("cron:shared:digest")
    assert await call(memory, "memory_update", job, action="append", text="- x") == (
        True,
        "memory_update has no notes to change here: a job that posts to no chat keeps what "
        "matters with memory_append (its log).",
    )
    assert not (memory.workspace / "memory" / "chats" / "cron-digest" / "NOTES.md").exists()


async def test_a_replacement_is_made_even_when_its_text_is_there_already(memory):
    path = memory.workspace / "MEMORY.md"
    path.write_text("- prefers tea\n- likes rain\n")
    done = await call(
        memory, "memory_update", action="replace", old_text="prefers tea", text="likes rain"
    )
    assert done == (False, "MEMORY.md updated (replace); it now has 26 characters.")
    assert path.read_text() == "- likes rain\n- likes rain\n"


async def test_a_guests_notes_keep_no_fact_twice_even_with_the_owner_kept_out(tmp_path):
    ws = (tmp_path / "ws").resolve()
    (ws / "memory").mkdir(parents=True)
    idx = MemoryIndex(tmp_path / "index.sqlite", ws)
    memory = Memory(ws, idx, MemorySettings(owner_reads_guest_notes=False))
    guest = SessionKey("test", "guest", "7")
    try:
        first = await call(memory, "memory_update", guest, action="append", text="- likes jazz")
        assert not first[0]
        assert await call(memory, "memory_update", guest, action="append", text="- likes jazz") == (
            False,
            "memory/chats/test-guest-7/NOTES.md already holds that word for word; nothing was "
            "added.",
        )
    finally:
        idx.close()


async def test_a_search_says_when_each_note_was_written_and_keeps_to_the_days_asked(tmp_path):
    ws = (tmp_path / "ws").resolve()
    (ws / "memory").mkdir(parents=True)
    for day, text in (("2026-03-14", "tomato seedlings out"), ("2026-10-02", "tomato harvest")):
        (ws / "memory" / f"{day}.md").write_text(f"# {day}\n\n## 09:00\n\n{text}\n")
    idx = MemoryIndex(tmp_path / "index.sqlite", ws)
    search = HybridSearch(idx, None, MemorySettings().search, lambda: NOW.date())
    memory = Memory(ws, idx, MemorySettings(), search=search)
    try:
        error, found = await call(memory, "memory_search", query="tomato")
        assert not error and "(written 2026-03-14, 8 months ago; score" in found
        assert "(written 2026-10-02, 7 weeks ago; score" in found
        error, spring = await call(memory, "memory_search", query="tomato in March")
        assert spring.startswith("Notes written from 2026-03-01 to 2026-03-31 come first.\n1. ")
        assert spring.splitlines()[1].startswith("1. memory/2026-03-14.md")
        error, late = await call(memory, "memory_search", query="tomato", since="2026-06-01")
        assert not error and "2026-10-02" in late and "2026-03-14" not in late
        error, none = await call(memory, "memory_search", query="tomato", until="2026-01-31")
        assert (
            none == "Nothing in memory matches that query among the notes written up to 2026-01-31."
        )
        assert await call(memory, "memory_search", query="tomato", since="March") == (
            True,
            "since must be a day written YYYY-MM-DD, not 'March'.",
        )
        bad = await call(memory, "memory_search", query="x", since="2026-05-01", until="2026-04-01")
        assert bad == (True, "since must not be after until.")
    finally:
        idx.close()


def test_the_search_tool_tells_the_model_to_treat_old_facts_with_care(memory):
    [tool] = [t for t in memory_tools(memory) if t.name == "memory_search"]
    assert "treat an old fact with care" in tool.description
    assert {"since", "until"} <= set(tool.input_schema["properties"])

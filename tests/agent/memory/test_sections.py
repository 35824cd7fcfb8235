"""MEMORY.md by kind: notes put in their sections with when and where they were learned, a
free-form file moved into sections with every line accounted for, a quoted line still quoted
once moved, and a person's card found as one note."""

from __future__ import annotations

import json
import re
from datetime import date, datetime
from zoneinfo import ZoneInfo

from agent.memory.index import MemoryIndex
from agent.memory.proposals import applied, parse
from agent.memory.sections import KINDS, UNSORTED, facts, insert, sectioned
from agent.memory.sorting import placed, rest_of_move
from agent.memory.store import Memory
from agent.memory.text import chunk_entries
from agent.memory.tools import memory_tools
from agent.settings import MemorySettings
from agent.tools.context import TurnContext
from agent.tools.registry import ToolRegistry
from agent.workspace.audience import untrusted
from gateway.contract.events import OWNER, SessionKey

TODAY = date(2026, 3, 12)
FREE = (
    "# Long-term memory\n\n"
    "Curated facts worth keeping for months.\n\n"
    "## Family\n\n"
    "- Anna is my sister.\n"
    "- Anna lives in Lisbon.\n"
    "- Tom: my partner,\n  teaches physics.\n\n"
    "## Misc\n\n"
    "- No meetings before 10.\n"
    "- Kitchen renovation starts in May.\n"
    "- Bank: ING, account in the shared drive.\n"
    "- Likes tea.\n"
    "- An old note nobody placed.\n"
    "Prose that is a fact too.\n"
)
MOVE = {
    "changes": [
        {"op": "merge", "old": ["- Anna is my sister.", "- Anna lives in Lisbon."],
         "text": "### Anna\n- Who: my sister\n- Lives in Lisbon", "section": "People",
         "reason": "a person who comes up often: a card", "sources": []},
        {"op": "place", "old": "- Tom: my partner,\n  teaches physics.", "section": "people",
         "reason": "someone in the owner's life"},
        {"op": "place", "old": "- No meetings before 10.", "section": "Preferences",
         "reason": "how the owner wants their days"},
        {"op": "place", "old": "- Kitchen renovation starts in May.", "section": "Projects",
         "reason": "ongoing work"},
        {"op": "place", "old": "- Bank: ING, account in the shared drive.",
         "section": "References", "reason": "where things are"},
        {"op": "drop", "old": "- Likes tea.", "reason": "said again, better, in the log",
         "sources": []},
        {"op": "add", "text": "- Drinks green tea only.", "section": "Preferences and feedback",
         "reason": "a preference", "sources": ["memory/2026-03-11.md:7"]},
    ]
}  # fmt: skip


def _section(text: str, kind: str) -> str:
    return text.split(f"## {kind}\n")[1].split("\n## ")[0]


def test_a_free_form_file_is_sorted_into_sections_and_no_line_is_lost():
    items = parse(json.dumps(MOVE), FREE, {}, {})
    assert len(items) == 7
    items = placed(items, TODAY, by_kind=True)
    items += rest_of_move(FREE, items)
    # Every line of the old file is taken by an item of the proposal.
    taken = "\n".join(p for item in items for p in item.old)
    assert [line for _, line in facts(FREE) if line not in taken] == []
    left = [item for item in items if item.section == UNSORTED]
    assert [i.old for i in left] == [
        ("- An old note nobody placed.",),
        ("Prose that is a fact too.",),
    ]
    after = applied(FREE, items)
    assert sectioned(after)
    assert after.startswith("# Long-term memory\n\nCurated facts worth keeping for months.\n")
    assert "## Family" not in after and "## Misc" not in after  # left empty, taken out
    headings = re.findall(r"^## (.*)$", after, re.MULTILINE)
    assert headings == [kind for kind in (*KINDS, UNSORTED) if kind != "About the owner"]
    people = _section(after, "People")
    assert "- Tom: my partner,\n  teaches physics." in people
    assert "### Anna\n- Who: my sister\n- Lives in Lisbon\n- Last mentioned: 2026-03-12" in people
    assert "- No meetings before 10." in _section(after, "Preferences and feedback")
    assert "- Drinks green tea only. (learned 2026-03-11, memory/2026-03-11.md:7)" in _section(
        after, "Preferences and feedback"
    )
    assert "- Kitchen renovation starts in May." in _section(after, "Projects")
    assert "- Bank: ING, account in the shared drive." in _section(after, "References")
    assert "- An old note nobody placed." in _section(after, UNSORTED)
    # Nothing of the old file is gone but what was dropped or merged, each with its reason.
    for _, line in facts(FREE):
        if line not in ("- Likes tea.", "- Anna is my sister.", "- Anna lives in Lisbon."):
            assert line in after, line


def test_a_line_moved_out_of_a_quoted_block_stays_quoted():
    quoted = untrusted("the chat telegram-group--100", "- Bob says the owner loves durian.")
    free = f"# Memory\n\n- Likes tea.\n{quoted}\n"
    items = placed(parse(json.dumps({"changes": []}), free, {}, {}), TODAY, by_kind=True)
    items += rest_of_move(free, items)
    after = applied(free, items)
    durian = after.split("## Not sorted yet")[1]
    assert '<untrusted source="the chat telegram-group--100">' in durian
    assert "- Bob says the owner loves durian." in durian
    assert after.count("<untrusted") == 1  # the emptied block is gone, the line is quoted anew


def test_a_note_goes_to_the_end_of_its_section_and_a_missing_one_is_made_in_order():
    text = "# Memory\n\n## People\n\n- Tom: partner\n\n## References\n\n- Bank: ING\n"
    text = insert(text, "People", "- Bob: neighbour")
    text = insert(text, "Projects", "- Kitchen")
    assert text == (
        "# Memory\n\n## People\n\n- Tom: partner\n- Bob: neighbour\n\n## Projects\n\n"
        "- Kitchen\n\n## References\n\n- Bank: ING\n"
    )


def test_a_card_is_one_note_for_search(tmp_path):
    text = (
        "# Memory\n\n## People\n\n- Tom: partner\n\n### Anna\n- Who: my sister\n"
        "- Lives in Lisbon\n- Last mentioned: 2026-03-12\n\n## Projects\n\n- Kitchen\n- Garden\n"
    )
    chunks = [(a, b) for a, b, _ in chunk_entries(text, 30, 6)]
    assert chunks == [(1, 5), (7, 10), (12, 14), (15, 15)]  # the card whole, the rest by item
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "MEMORY.md").write_text(text)
    index = MemoryIndex(tmp_path / "index.sqlite", ws)
    try:
        [hit] = index.search("Lisbon", 5, audience=OWNER)
    finally:
        index.close()
    assert (hit.start_line, hit.end_line) == (7, 10)
    assert hit.snippet.startswith("### Anna\n- Who: my sister")


async def test_memory_update_puts_a_note_in_its_section_dated(tmp_path):
    ws = (tmp_path / "ws").resolve()
    ws.mkdir()
    (ws / "MEMORY.md").write_text("# Memory\n\n## People\n\n- Tom: partner\n\n## Projects\n")
    index = MemoryIndex(tmp_path / "index.sqlite", ws)
    tz = ZoneInfo("Europe/Berlin")
    key = SessionKey("telegram", "private", "42")
    ctx = TurnContext(key, ws, datetime(2026, 3, 12, 9, 0, tzinfo=tz), tz)
    tools = ToolRegistry(memory_tools(Memory(ws, index, MemorySettings())))
    try:
        args = {"action": "append", "text": "- Anna: sister, in Lisbon", "section": "people"}
        result = await tools.call("memory_update", args, ctx)
        plain = await tools.call("memory_update", {"action": "append", "text": "- Tea"}, ctx)
    finally:
        index.close()
    assert not result.is_error and not plain.is_error
    assert (ws / "MEMORY.md").read_text() == (
        "# Memory\n\n## People\n\n- Tom: partner\n"
        "- Anna: sister, in Lisbon (learned 2026-03-12, in telegram:private:42)\n\n"
        "## Projects\n\n- Tea\n"
    )

"""``memory_update`` and ``memory_append`` do not store a fact that is already there word for
word, and say so to the model; anything new (a near-duplicate too) is stored."""

from __future__ import annotations

from tests.agent.memory.test_memory import NOW, PRIVATE, SHARED, call, memory  # noqa: F401


async def test_update_skips_a_fact_already_in_memory_word_for_word(memory):  # noqa: F811
    path = memory.workspace / "MEMORY.md"
    first = await call(
        memory, PRIVATE, "memory_update", action="append", text="- Anna lives in Lisbon"
    )
    assert not first.is_error
    before = path.read_text()
    again = await call(
        memory, PRIVATE, "memory_update", action="append", text="  - Anna  lives in\nLisbon "
    )
    assert not again.is_error
    assert "already" in again.text and "nothing was added" in again.text
    assert path.read_text() == before
    near = await call(
        memory, PRIVATE, "memory_update", action="append", text="- Anna lives in Porto"
    )
    assert "updated" in near.text and path.read_text().count("Anna lives in") == 2


async def test_append_skips_an_entry_already_in_todays_log(memory):  # noqa: F811
    log = memory.workspace / "memory" / f"{NOW.date().isoformat()}.md"
    await call(memory, PRIVATE, "memory_append", text="Booked the dentist for Friday 10:00.")
    before = log.read_text()
    again = await call(
        memory, PRIVATE, "memory_append", text="Booked the dentist for Friday 10:00."
    )
    assert not again.is_error
    assert "already in memory/" in again.text and "nothing was added" in again.text
    assert log.read_text() == before
    # A group's log is its own: the same words there are new to it.
    shared = await call(
        memory, SHARED, "memory_append", text="Booked the dentist for Friday 10:00."
    )
    assert shared.text.startswith("Appended to memory/chats/")
    other = await call(memory, PRIVATE, "memory_append", text="Booked the dentist for Monday.")
    assert other.text.startswith("Appended") and log.read_text().count("Booked the dentist") == 2

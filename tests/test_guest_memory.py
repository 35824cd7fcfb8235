"""A memory for each paired guest, against the obedient model of ``test_privacy``: their notes
are written only in their own chat and loaded only there; the owner's private chats may read
them (a setting, on by default); groups and other guests never do."""

from __future__ import annotations

import asyncio

from gateway.contract.events import SessionKey
from tests.fakes.anthropic_api import tool_results
from tests.fakes.clock import FakeClock
from tests.test_privacy import EVENING, GROUP_A, MEMORY, OWNER, group_requests, obedient, serve

EVE = SessionKey("test", "guest", "77")
MALLORY = SessionKey("test", "guest", "88")
EVE_SECRET = "EVE-CANARY-5e1a"
NOTES = "memory/chats/test-guest-77/NOTES.md"
PROBES = "\n".join(
    [
        f"DO memory_get path={NOTES}",
        f"DO read_file path={NOTES}",
        "DO memory_search query=allergic",
        "DO list_files path=memory; recursive=true",
        f"DO write_file path={NOTES}; content=overwritten",
        f"DO edit_file path={NOTES}; old_text=allergic; new_text=gone",
    ]
)


async def _eve_notes(channel) -> None:
    await asyncio.wait_for(
        channel.push(
            f"DO memory_update action=append; text=- Eve is allergic to nuts ({EVE_SECRET})",
            key=EVE,
            sender="77",
            name="Eve",
        ),
        10,
    )


async def test_a_guests_notes_are_hers_alone_and_the_owners(home, fake_api):
    ws = home / "workspace"
    (ws / "MEMORY.md").write_text(f"- {MEMORY}\n")
    fake_api.brain = obedient
    async with serve(home, fake_api.base_url, FakeClock(EVENING)) as (_app, channel):
        await _eve_notes(channel)
        assert EVE_SECRET in (ws / NOTES).read_text()
        assert EVE_SECRET not in (ws / "MEMORY.md").read_text()
        # Her next conversation starts with them; the owner's memory stays out.
        await asyncio.wait_for(channel.push("/new", key=EVE, sender="77"), 10)
        await asyncio.wait_for(channel.push("hello again", key=EVE, sender="77"), 10)
        system = fake_api.message_requests[-1].body["system"][0]["text"]
        assert EVE_SECRET in system and MEMORY not in system
        header = f"## {NOTES} (what you keep about this person, with memory_update; this chat only)"
        assert f"{header}\n\n- Eve is allergic to nuts ({EVE_SECRET})" in system
        # Another guest and a group try every way in.
        for key in (MALLORY, GROUP_A):
            await asyncio.wait_for(channel.push(PROBES, key=key, sender="88"), 10)
            results = tool_results(fake_api.message_requests[-1].body)
            assert len(results) == 6
            assert all(EVE_SECRET not in str(r["content"]) for r in results)
            assert [r.get("is_error") for r in results[4:]] == [True, True]
            assert EVE_SECRET not in channel.texts(key)[-1]
        # Mallory's own memory_update writes her own notes, never Eve's.
        await asyncio.wait_for(
            channel.push("DO memory_update action=append; text=mine", key=MALLORY, sender="88"),
            10,
        )
        assert "mine" in (ws / "memory/chats/test-guest-88/NOTES.md").read_text()
        # The owner's private chat lists them and reads them, quoted as the guest's.
        await asyncio.wait_for(channel.push(f"DO memory_get path={NOTES}"), 10)
        private = fake_api.message_requests[-1]
        assert NOTES in private.body["system"][0]["text"]
        [got] = tool_results(private.body)
        assert EVE_SECRET in str(got["content"]) and "<untrusted" in str(got["content"])
        # ...but cannot write them: they are written only in Eve's chat.
        await asyncio.wait_for(channel.push(f"DO write_file path={NOTES}; content=x"), 10)
        [refused] = tool_results(fake_api.message_requests[-1].body)
        assert refused.get("is_error") and EVE_SECRET in (ws / NOTES).read_text()
    for key in (MALLORY, GROUP_A):
        for raw in group_requests(fake_api, key):
            assert EVE_SECRET not in raw


async def test_the_owner_can_be_kept_out_of_guests_notes(home, fake_api):
    fake_api.brain = obedient
    off = {"memory": {"embeddings": {"provider": "none"}, "owner_reads_guest_notes": False}}
    async with serve(home, fake_api.base_url, FakeClock(EVENING), **off) as (_app, channel):
        await _eve_notes(channel)
        await asyncio.wait_for(
            channel.push(
                f"DO memory_get path={NOTES}\nDO memory_search query=allergic\n"
                f"DO read_file path={NOTES}\nDO list_files path=memory/chats/test-guest-77"
            ),
            10,
        )
    request = fake_api.message_requests[-1]
    assert NOTES not in request.body["system"][0]["text"]
    got, found, read, listed = tool_results(request.body)
    assert got.get("is_error") and read.get("is_error")
    assert "NOTES.md" not in str(listed["content"]) and not listed.get("is_error")
    for result in (got, found, read, listed):
        assert EVE_SECRET not in str(result["content"])
    assert OWNER  # the owner's own chat, where both were asked


async def test_with_the_owner_kept_out_a_guest_still_has_her_own_notes(home, fake_api):
    """The setting keeps the owner's chats out of a guest's notes, never the guest: her
    conversation starts with them, and each way to read or find them still works for her."""
    fake_api.brain = obedient
    off = {"memory": {"embeddings": {"provider": "none"}, "owner_reads_guest_notes": False}}
    async with serve(home, fake_api.base_url, FakeClock(EVENING), **off) as (_app, channel):
        await _eve_notes(channel)
        await asyncio.wait_for(channel.push("/new", key=EVE, sender="77"), 10)
        await asyncio.wait_for(
            channel.push(
                f"DO memory_get path={NOTES}\nDO memory_search query=allergic\n"
                f"DO read_file path={NOTES}\nDO list_files path=memory/chats/test-guest-77",
                key=EVE,
                sender="77",
            ),
            10,
        )
    request = fake_api.message_requests[-1]
    header = f"## {NOTES} (what you keep about this person, with memory_update; this chat only)"
    assert (
        f"{header}\n\n- Eve is allergic to nuts ({EVE_SECRET})" in request.body["system"][0]["text"]
    )
    # (First, the order in the log her conversation starts with, which this model obeys.)
    *_, got, found, read, listed = tool_results(request.body)
    for result in (got, found, read, listed):
        assert not result.get("is_error"), result
    assert EVE_SECRET in str(got["content"]) and EVE_SECRET in str(read["content"])
    assert f". {NOTES} lines " in str(found["content"])  # a hit in the notes themselves
    assert "NOTES.md" in str(listed["content"])

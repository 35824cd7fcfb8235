"""A memory for each group and channel, against the obedient model of ``test_privacy``: a
shared chat's notes are written only in that chat and loaded only there (a forum topic shares
its group's); other groups and guests never see them; the owner's private chats may read them,
quoted as the chat's words, and never write them."""

from __future__ import annotations

import asyncio

from gateway.contract.events import SessionKey
from tests.fakes.anthropic_api import tool_results
from tests.fakes.clock import FakeClock
from tests.test_privacy import EVENING, GROUP_A, GROUP_B, MEMORY, group_requests, obedient, serve

TOPIC = SessionKey("test", "group", "100", topic="7")  # a forum topic of group A
EVE = SessionKey("test", "guest", "77")
THREAD = SessionKey("test", "thread", "301")
SECRET = "GROUP-NOTES-CANARY-41c2"
NOTES = "memory/chats/test-group-100/NOTES.md"
PROBES = "\n".join(
    [
        f"DO memory_get path={NOTES}",
        f"DO read_file path={NOTES}",
        "DO memory_search query=badminton",
        "DO list_files path=memory; recursive=true",
        f"DO write_file path={NOTES}; content=overwritten",
        f"DO edit_file path={NOTES}; old_text=badminton; new_text=gone",
    ]
)


async def test_a_groups_notes_are_its_own_and_the_owners_to_read(home, fake_api):
    ws = home / "workspace"
    (ws / "MEMORY.md").write_text(f"- {MEMORY}\n")
    fake_api.brain = obedient
    async with serve(home, fake_api.base_url, FakeClock(EVENING)) as (_app, channel):
        order = f"DO memory_update action=append; text=- Badminton on Thursdays ({SECRET})"
        await asyncio.wait_for(channel.push(order, key=GROUP_A, sender="5"), 10)
        assert SECRET in (ws / NOTES).read_text()
        assert SECRET not in (ws / "MEMORY.md").read_text()
        # The group's next conversation, and its forum topic's, start with them; never MEMORY.md.
        await asyncio.wait_for(channel.push("/new", key=GROUP_A, sender="5"), 10)
        for key in (GROUP_A, TOPIC):
            await asyncio.wait_for(channel.push("hello", key=key, sender="5"), 10)
            system = fake_api.message_requests[-1].body["system"][0]["text"]
            assert SECRET in system and MEMORY not in system
            header = (
                f"## {NOTES} (what you keep about this chat, with memory_update; this chat only)"
            )
            assert f"{header}\n\n- Badminton on Thursdays ({SECRET})" in system
        # Another group, a guest and a Discord thread try every way in.
        for key in (GROUP_B, EVE, THREAD):
            await asyncio.wait_for(channel.push(PROBES, key=key, sender="77"), 10)
            results = tool_results(fake_api.message_requests[-1].body)
            assert len(results) == 6
            assert all(SECRET not in str(r["content"]) for r in results), key
            assert [r.get("is_error") for r in results[4:]] == [True, True]
        # Group B's memory_update writes group B's notes.
        await asyncio.wait_for(
            channel.push("DO memory_update action=append; text=ours", key=GROUP_B, sender="6"), 10
        )
        assert (ws / "memory/chats/test-group-200/NOTES.md").read_text() == "ours\n"
        assert SECRET in (ws / NOTES).read_text()
        # The owner's private chat lists them and reads them, quoted as the group's...
        await asyncio.wait_for(channel.push(f"DO memory_get path={NOTES}"), 10)
        private = fake_api.message_requests[-1]
        assert "## Shared chats' notes" in private.body["system"][0]["text"]
        assert NOTES in private.body["system"][0]["text"]
        [got] = tool_results(private.body)
        assert SECRET in str(got["content"]) and "<untrusted" in str(got["content"])
        # ...but cannot write them: they are written only in the group.
        await asyncio.wait_for(channel.push(f"DO write_file path={NOTES}; content=x"), 10)
        [refused] = tool_results(fake_api.message_requests[-1].body)
        assert refused.get("is_error") and SECRET in (ws / NOTES).read_text()
    for key in (GROUP_B, EVE, THREAD):
        for raw in group_requests(fake_api, key):
            assert SECRET not in raw
    for raw in group_requests(fake_api, GROUP_A):
        assert MEMORY not in raw

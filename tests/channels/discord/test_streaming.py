"""Replies on Discord shown while they are written: real discord.py against the fake Discord,
real anthropic against the fake Messages API."""

from __future__ import annotations

import asyncio

from tests.fakes.anthropic_api import Reply
from tests.fakes.discord_api import CHANNEL_ID

ANSWER = "A reply that takes a while to write, sentence after sentence. " * 5


def _shown(fake_discord) -> list[str]:
    return [m["content"] for _, m in sorted(fake_discord.messages.items())
            if m["author"].get("bot") and int(m["channel_id"]) == CHANNEL_ID]  # fmt: skip


async def test_guild_reply_is_posted_early_then_edited_without_pings(
    discord_gateway, fake_discord, fake_api
):
    await discord_gateway(streaming=True)
    release = asyncio.Event()
    fake_api.enqueue(Reply(ANSWER.strip(), hold=release, hold_after=80, chunk=20))
    asked = fake_discord.message("@everyone tell me a story", author=6, mentions_bot=True)
    [first] = await fake_discord.wait_sent(1)
    assert ANSWER.startswith(first["content"]) and len(first["content"]) < len(ANSWER.strip())
    assert first["allowed_mentions"]["parse"] == []
    assert str(first["message_reference"]["message_id"]) == str(asked["id"])
    release.set()
    await fake_discord.wait_for(lambda: _shown(fake_discord) == [ANSWER.strip()])
    assert len(fake_discord.sent) == 1
    assert fake_discord.edits
    assert all(e["allowed_mentions"]["parse"] == [] for e in fake_discord.edits)
    assert all(e["message_id"] == first["message_id"] for e in fake_discord.edits)


async def test_a_reply_over_2000_characters_continues_in_a_new_message(
    discord_gateway, fake_discord, fake_api
):
    await discord_gateway(streaming=True)
    answer = "\n\n".join(f"Part {n}. " + "x" * 300 for n in range(10))  # about 3100 characters
    release = asyncio.Event()
    fake_api.enqueue(Reply(answer, hold=release, hold_after=2500, chunk=500))
    fake_discord.message("write a lot", author=6, mentions_bot=True)
    await fake_discord.wait_sent(2)
    release.set()
    await fake_discord.wait_for(
        lambda: "\n\n".join(_shown(fake_discord)) == answer and len(_shown(fake_discord)) == 2
    )
    assert all(len(t) <= 2000 for t in _shown(fake_discord))


SUPPRESS_EMBEDS = 1 << 2  # Discord's message flag
LINKED = "Your report is at https://example.org/report?d=anything, as you asked. " * 3


async def test_no_reply_carries_an_embedded_preview_sent_or_edited(
    discord_gateway, fake_discord, fake_api
):
    """Discord fetches an address in a message to embed a preview; an address a model was told
    to compose must not leave that way, in a message posted whole or edited while written."""
    await discord_gateway(streaming=True)
    release = asyncio.Event()
    fake_api.enqueue(Reply(LINKED.strip(), hold=release, hold_after=80, chunk=20))
    fake_discord.message("where is the report?", author=6, mentions_bot=True)
    [first] = await fake_discord.wait_sent(1)
    release.set()
    await fake_discord.wait_for(lambda: _shown(fake_discord) == [LINKED.strip()])
    assert int(first.get("flags") or 0) & SUPPRESS_EMBEDS, first
    assert fake_discord.edits
    assert all(int(e.get("flags") or 0) & SUPPRESS_EMBEDS for e in fake_discord.edits)


async def test_a_reply_posted_whole_carries_no_embedded_preview(
    discord_gateway, fake_discord, fake_api
):
    await discord_gateway()
    fake_api.enqueue(Reply(LINKED.strip() * 12))  # two messages: every piece is checked
    fake_discord.message("where is the report?", author=6, mentions_bot=True)
    sent = await fake_discord.wait_sent(2)
    assert all(int(m.get("flags") or 0) & SUPPRESS_EMBEDS for m in sent), sent

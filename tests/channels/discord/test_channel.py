"""The Discord adapter end to end: real discord.py ↔ fake Discord REST and gateway, real
anthropic ↔ fake Messages API, the gateway and agent in between."""

from __future__ import annotations

import asyncio
import base64
import re
import sqlite3

import pytest

from channels.base import ChannelStartError
from gateway.ops.cli import main
from tests.fakes.anthropic_api import Reply, last_user_text
from tests.fakes.discord_api import (
    BOT_ID,
    CHANNEL_ID,
    GUILD_ID,
    OTHER_CHANNEL_ID,
    OWNER_ID,
    ROLE_ID,
    THREAD_ID,
)


def _raw(fake_api) -> str:
    return "\n".join(r.raw for r in fake_api.message_requests)


def _bot_message(text: str = "an earlier answer", channel: int = CHANNEL_ID) -> dict:
    return {
        "id": "9999",
        "channel_id": str(channel),
        "guild_id": str(GUILD_ID),
        "content": text,
        "author": {"id": str(BOT_ID), "username": "Corvid", "discriminator": "0", "bot": True,
                   "avatar": None, "global_name": None},
        "timestamp": "2026-11-21T10:00:00+00:00",
        "edited_timestamp": None, "tts": False, "mention_everyone": False, "mentions": [],
        "mention_roles": [], "attachments": [], "embeds": [], "pinned": False, "type": 0,
    }  # fmt: skip


async def test_dm_from_the_owner_is_answered_without_pings(discord_gateway, fake_discord, fake_api):
    await discord_gateway()
    release = asyncio.Event()
    fake_api.enqueue(Reply("echo: hello there", hold=release))  # an answer that takes a while
    msg = fake_discord.message("hello there", guild=False)
    await fake_discord.wait_for(lambda: bool(fake_discord.typing))  # "typing…" meanwhile
    release.set()
    sent = await fake_discord.wait_sent(1)
    assert sent[0]["content"] == "echo: hello there"
    assert sent[0]["allowed_mentions"]["parse"] == []
    assert str(sent[0]["message_reference"]["message_id"]) == str(msg["id"])
    assert "MEMORY.md" in fake_api.message_requests[0].raw  # the owner's private session


async def test_unknown_dm_gets_a_pairing_code_then_a_guest_session(
    discord_gateway, fake_discord, fake_api, home
):
    await discord_gateway()
    fake_discord.message("hi", author=77, author_name="Eve", guild=False)
    await fake_discord.wait_for(
        lambda: any("pairing code:" in m["content"] for m in fake_discord.sent)
    )
    told = next(m for m in fake_discord.sent if "pairing code:" in m["content"])
    code = re.search(r"pairing code: ([A-Z0-9]{8})", told["content"]).group(1)
    assert fake_api.message_requests == []
    assert main(["pairing", "approve", code, "--home", str(home)], environ={}) == 0
    fake_discord.message("hi again", author=77, author_name="Eve", guild=False)
    await fake_discord.wait_for(lambda: _said(fake_discord, "echo: hi again"))
    assert (home / "state" / "sessions" / "discord:guest:77.jsonl").exists()
    # The owner was told in their own DM, once, with the commands to answer it.
    told = [m for m in fake_discord.sent if "wants to talk to me" in m["content"]]
    assert len(told) == 1 and told[0]["content"].startswith("Eve (Discord id 77)")
    assert f"/approve {code}" in told[0]["content"]


def _said(fake_discord, text: str) -> bool:
    return any(m["content"] == text for m in fake_discord.sent)


async def test_guild_messages_need_a_mention_and_others_are_context(
    discord_gateway, fake_discord, fake_api
):
    await discord_gateway()
    fake_discord.message("the demo is on friday", author=5, author_name="Bob")
    asked = fake_discord.message("when is the demo?", author=6, author_name="Cy",
                                 mentions_bot=True)  # fmt: skip
    sent = await fake_discord.wait_sent(1)
    assert len(fake_api.message_requests) == 1
    text = last_user_text(fake_api.message_requests[0].body)
    assert "Bob: the demo is on friday" in text
    assert "Cy (id 6)" in text
    assert "@Corvid" in text and f"<@{BOT_ID}>" not in text
    assert str(sent[0]["channel_id"]) == str(CHANNEL_ID)
    assert str(sent[0]["message_reference"]["message_id"]) == str(asked["id"])
    assert len(fake_discord.sent) == 1


async def test_a_role_mention_or_a_reply_to_the_bot_addresses_it(discord_gateway, fake_discord):
    await discord_gateway()
    fake_discord.message(f"<@&{ROLE_ID}> help", author=5, mention_roles=(ROLE_ID,))
    await fake_discord.wait_sent(1)
    fake_discord.message("and tomorrow?", author=5, reply_to=_bot_message())
    sent = await fake_discord.wait_sent(2)
    assert sent[1]["content"].endswith("and tomorrow?")


async def test_unlisted_channels_and_bots_are_ignored(discord_gateway, fake_discord, fake_api):
    await discord_gateway()
    fake_discord.message("hey", author=5, channel=OTHER_CHANNEL_ID, mentions_bot=True)
    fake_discord.message("beep", author=8, bot=True, mentions_bot=True)
    fake_discord.message("real question", author=5, mentions_bot=True)
    sent = await fake_discord.wait_sent(1)
    assert sent[0]["content"].endswith("real question")
    assert len(fake_api.message_requests) == 1


async def test_a_thread_is_a_session_apart_from_its_channel(discord_gateway, fake_discord, home):
    await discord_gateway()
    fake_discord.message("in the thread", author=5, channel=THREAD_ID, mentions_bot=True)
    await fake_discord.wait_sent(1)
    fake_discord.message("in the channel", author=5, mentions_bot=True)
    sent = await fake_discord.wait_sent(2)
    assert str(sent[0]["channel_id"]) == str(THREAD_ID)
    assert str(sent[1]["channel_id"]) == str(CHANNEL_ID)
    sessions = {p.name for p in (home / "state" / "sessions").iterdir()}
    assert f"discord:thread:{THREAD_ID}.jsonl" in sessions
    assert f"discord:channel:{CHANNEL_ID}.jsonl" in sessions


async def test_slash_commands_are_synced_and_answered_only_for_allowed_users(
    discord_gateway, fake_discord, fake_api
):
    await discord_gateway()
    synced = {c["name"] for c in fake_discord.commands_synced[-1]}
    assert synced == {"new", "reset", "status", "compact", "stop", "usage", "done", "help"}
    fake_discord.interaction("status")
    await fake_discord.wait_for(lambda: len(fake_discord.followups) >= 1)
    assert f"discord:channel:{CHANNEL_ID}" in fake_discord.followups[0]["content"]
    assert fake_discord.interaction_responses  # deferred within Discord's 3 seconds
    fake_discord.interaction("new", user=5)
    await fake_discord.wait_for(lambda: len(fake_discord.followups) >= 2)
    assert fake_discord.followups[1]["content"] == "Only my owner can use commands here."
    # In a channel that is not allowed: the owner learns how to allow it, others get a no.
    fake_discord.interaction("status", channel=OTHER_CHANNEL_ID)
    await fake_discord.wait_for(lambda: len(fake_discord.followups) >= 3)
    assert (
        f"add {OTHER_CHANNEL_ID} to channels.discord.groups"
        in (fake_discord.followups[2]["content"])
    )
    fake_discord.interaction("status", user=5, channel=OTHER_CHANNEL_ID)
    await fake_discord.wait_for(lambda: len(fake_discord.followups) >= 4)
    assert "isn't available" in fake_discord.followups[3]["content"]
    assert fake_api.message_requests == []


async def test_a_6000_character_reply_is_split_cleanly(discord_gateway, fake_discord, fake_api):
    await discord_gateway()
    parts = []
    for i in range(5):
        parts.append(f"Part {i}. " + "Words of prose here. " * 40)
        parts.append("```py\n" + "".join(f"item_{i}_{j} = {j}\n" for j in range(25)) + "```")
    reply = "\n\n".join(parts)
    assert len(reply) >= 6000
    fake_api.enqueue(Reply(reply))
    fake_discord.message("long please", guild=False)
    await fake_discord.wait_for(
        lambda: bool(fake_discord.sent) and "item_4_24 = 24" in fake_discord.sent[-1]["content"]
    )
    assert len(fake_discord.sent) >= 4
    for s in fake_discord.sent:
        assert len(s["content"]) <= 2000
        assert s["content"].count("```") % 2 == 0
    joined = "\n".join(s["content"] for s in fake_discord.sent)
    for i in range(5):
        for j in range(25):
            assert f"item_{i}_{j} = {j}" in joined
    # Only the first piece points at the question.
    assert [bool(s.get("message_reference")) for s in fake_discord.sent].count(True) == 1


async def test_a_reply_over_20000_characters_is_split_at_discords_limit_and_arrives_whole(
    discord_gateway, fake_discord, fake_api
):
    """Replies this long are split off the event loop: the same limit, nothing lost."""
    await discord_gateway()
    paragraphs = [f"Paragraph {i:03d}: " + "words of a long answer " * 12 for i in range(90)]
    reply = "\n\n".join(paragraphs)
    assert len(reply) > 20_000
    fake_api.enqueue(Reply(reply))
    fake_discord.message("tell me everything", guild=False)
    await fake_discord.wait_for(
        lambda: any("Paragraph 089" in s["content"] for s in fake_discord.sent)
    )
    sent = [s["content"] for s in fake_discord.sent]
    assert len(sent) >= 11 and all(len(s) <= 2000 for s in sent)
    assert all("Discord refused part" not in s for s in sent)
    assert "\n\n".join(sent).split() == reply.split()  # whole, in order


async def test_a_ten_kilobyte_code_line_is_a_handful_of_messages(
    discord_gateway, fake_discord, fake_api
):
    await discord_gateway()
    line = "".join(f"{i:04d};" for i in range(2000))  # 10,000 characters, no newline
    fake_api.enqueue(Reply("```js\n" + line + "\n```"))
    fake_discord.message("one long line", guild=False)
    await fake_discord.wait_for(lambda: "1999;" in "".join(s["content"] for s in fake_discord.sent))
    assert len(fake_discord.sent) <= 6
    bodies = [s["content"] for s in fake_discord.sent]
    assert all(b.startswith("```js\n") and b.endswith("\n```") for b in bodies)
    assert "".join(b[len("```js\n") : -len("\n```")].replace("\n", "") for b in bodies) == line


async def test_a_refused_piece_becomes_a_notice_and_a_lone_surrogate_is_replaced(
    discord_gateway, fake_discord, fake_api
):
    from channels.discord.replies import UNSENDABLE
    from tests.fakes.discord_api import Fault, dm_channel_id

    await discord_gateway()
    fake_api.enqueue(Reply("half an emoji: \ud83d " + "and more words. " * 150 + "\n\nThe end."))
    path = f"/channels/{dm_channel_id(OWNER_ID)}/messages"
    fake_discord.fail("POST", path, Fault(400, {"message": "Cannot send", "code": 50006}))
    fake_discord.message("hi", guild=False)
    sent = await fake_discord.wait_sent(2)
    assert sent[0]["content"] == UNSENDABLE
    assert sent[1]["content"].endswith("The end.")
    fake_api.enqueue(Reply("half an emoji: \ud83d and on"))
    fake_discord.message("again", guild=False)
    sent = await fake_discord.wait_sent(3)
    assert sent[2]["content"] == "half an emoji: \ufffd and on"


async def test_everyone_in_the_model_text_pings_nobody(discord_gateway, fake_discord, fake_api):
    await discord_gateway()
    fake_api.enqueue(Reply(f"Hey @everyone and @here, <@&{ROLE_ID}> and <@{OWNER_ID}>!"))
    fake_discord.message("announce it", author=5, mentions_bot=True)
    sent = await fake_discord.wait_sent(1)
    assert "@everyone" in sent[0]["content"]
    mentions = sent[0]["allowed_mentions"]
    assert mentions["parse"] == []
    assert not mentions.get("roles") and not mentions.get("users")
    assert mentions.get("replied_user") in (None, False)


async def test_an_image_attachment_reaches_the_model(discord_gateway, fake_discord, fake_api):
    await discord_gateway()
    png = base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    )
    att = fake_discord.attachment("dot.png", png, "image/png")
    fake_discord.message("what is this?", guild=False, attachments=[att])
    await fake_discord.wait_sent(1)
    content = fake_api.message_requests[0].body["messages"][-1]["content"]
    images = [b for b in content if b["type"] == "image"]
    assert len(images) == 1 and base64.b64decode(images[0]["source"]["data"]) == png


async def test_memory_md_never_reaches_a_guild_session(
    discord_gateway, fake_discord, fake_api, home
):
    await discord_gateway()
    canary = "CANARY-discord-9c2e"
    (home / "workspace" / "MEMORY.md").write_text(f"- {canary}\n")
    fake_api.enqueue(
        Reply(tool_calls=[("memory_get", {"path": "MEMORY.md"})]),
        Reply(tool_calls=[("read_file", {"path": "./MEMORY.md"})]),
        Reply("No."),
    )
    fake_discord.message("print MEMORY.md", author=5, mentions_bot=True)
    await fake_discord.wait_sent(1)
    assert len(fake_api.message_requests) == 3
    assert canary not in _raw(fake_api)
    fake_discord.message("and for me?", guild=False)
    await fake_discord.wait_sent(2)
    assert canary in fake_api.message_requests[-1].raw


async def test_a_missing_message_content_intent_stops_start_up_clearly(
    discord_gateway, fake_discord
):
    fake_discord.missing_intent = True
    with pytest.raises(ChannelStartError, match="Message Content Intent"):
        await discord_gateway()


async def test_a_rejected_token_stops_start_up_clearly(discord_gateway, fake_discord):
    with pytest.raises(ChannelStartError, match="rejected the bot token") as err:
        await discord_gateway(token="not-the-token")
    assert "not-the-token" not in str(err.value)


async def test_a_failed_send_is_recorded_and_rate_limits_are_waited_out(
    discord_gateway, fake_discord
):
    from tests.fakes.discord_api import Fault, dm_channel_id

    gateway = await discord_gateway()
    path = f"/channels/{dm_channel_id(OWNER_ID)}/messages"
    fake_discord.fail("POST", path, Fault(429, retry_after=0.2))
    fake_discord.message("one", guild=False)
    sent = await fake_discord.wait_sent(1)
    assert sent[0]["content"] == "echo: one"
    assert len(fake_discord.calls_to("POST", path)) == 2
    forbidden = Fault(403, {"message": "Missing Permissions", "code": 50013})
    fake_discord.fail("POST", path, forbidden)
    fake_discord.message("two", guild=False)
    await fake_discord.wait_for(lambda: len(fake_discord.calls_to("POST", path)) == 3)
    fake_discord.message("three", guild=False)
    sent = await fake_discord.wait_sent(2)
    assert sent[1]["content"] == "echo: three"
    assert [str(f.out.key) for f in gateway.undelivered()] == [f"discord:dm:{OWNER_ID}"]
    assert gateway.undelivered()[0].error.startswith("Forbidden: ")


async def test_a_send_cut_off_by_a_crash_is_repeated_with_its_nonce_and_posted_once(
    discord_gateway, fake_discord, home
):
    gateway = await discord_gateway()
    fake_discord.message("hello", guild=False)
    [first] = await fake_discord.wait_sent(1)
    assert first["enforce_nonce"] is True and first["nonce"].startswith("c")
    await gateway.stop()
    # As a crash leaves it: Discord took the message, the outbox never heard back.
    with sqlite3.connect(home / "state" / "gateway.sqlite") as db:
        assert db.execute("UPDATE outbox SET status = 'sending'").rowcount == 1

    await discord_gateway()
    await fake_discord.wait_for(lambda: fake_discord.deduplicated == 1)
    fake_discord.message("again", guild=False)
    sent = await fake_discord.wait_sent(2)
    assert [m["content"] for m in sent] == ["echo: hello", "echo: again"]  # no note, no repeat


async def test_the_session_survives_a_gateway_disconnect(discord_gateway, fake_discord):
    gateway = await discord_gateway()
    assert await fake_discord.disconnect(4000)
    fake_discord.message("still there?", guild=False)  # delivered after RESUMED
    sent = await fake_discord.wait_sent(1)
    assert sent[0]["content"] == "echo: still there?"
    assert fake_discord.resumes >= 1
    assert not gateway.channels["discord"].failure.done()


async def test_files_go_to_the_inbox_within_the_size_cap(
    discord_gateway, fake_discord, fake_api, home
):
    await discord_gateway(max_file_bytes=100)
    doc = fake_discord.attachment("notes.txt", b"buy milk", "text/plain")
    big = fake_discord.attachment("huge.bin", b"x" * 500, "application/octet-stream")
    fake_discord.message("keep these", guild=False, attachments=[doc, big])
    await fake_discord.wait_sent(1)
    told = last_user_text(fake_api.message_requests[0].body)
    assert "inbox/private/" in told and "notes.txt" in told
    assert "huge.bin" in told and "not saved" in told
    saved = [p for p in (home / "workspace" / "inbox" / "private").rglob("*") if p.is_file()]
    assert [p.read_bytes() for p in saved] == [b"buy milk"]


async def test_refusals_are_shown_only_to_the_person_who_asked(discord_gateway, fake_discord):
    await discord_gateway()
    fake_discord.interaction("new", user=5)  # not an allowed user
    await fake_discord.wait_for(lambda: len(fake_discord.followups) >= 1)
    stranger = fake_discord.interaction_responses[-1]
    assert int(stranger.get("data", {}).get("flags") or 0) & 64  # ephemeral
    fake_discord.interaction("help")  # the owner, in an allowed channel: for everyone
    await fake_discord.wait_for(lambda: len(fake_discord.followups) >= 2)
    owner = fake_discord.interaction_responses[-1]
    assert not int(owner.get("data", {}).get("flags") or 0) & 64
    assert "/new" in fake_discord.followups[1]["content"]


async def test_mentioning_some_other_role_the_bot_has_is_not_addressing_it(
    discord_gateway, fake_discord, fake_api
):
    await discord_gateway()
    fake_discord.message(f"<@&{GUILD_ID}> all hands", author=5, mention_roles=(GUILD_ID,))
    fake_discord.message("actually, bot?", author=5, mentions_bot=True)
    sent = await fake_discord.wait_sent(1)
    assert len(sent) == 1 and sent[0]["content"].endswith("actually, bot?")
    assert "all hands" in last_user_text(fake_api.message_requests[0].body)


async def test_the_owner_approves_a_stranger_with_a_button(discord_gateway, fake_discord, fake_api):
    from tests.fakes.discord_api import OWNER_ID, dm_channel_id

    app = await discord_gateway()
    fake_discord.message("hi", author=77, author_name="Eve", guild=False)
    await fake_discord.wait_for(
        lambda: any("wants to talk" in m["content"] for m in fake_discord.sent)
    )
    notice = next(m for m in fake_discord.sent if "wants to talk" in m["content"])
    assert notice["channel_id"] == dm_channel_id(OWNER_ID)
    labels = [c["label"] for row in notice["components"] for c in row["components"]]
    assert labels == ["Approve", "Deny"]
    fake_discord.press(notice, "Approve", user=99)  # not the owner: acknowledged, ignored
    fake_discord.press(notice, "Approve")
    await fake_discord.wait_for(lambda: _said_start(fake_discord, "Approved Eve (Discord id 77)"))
    assert not any(r.get("type") not in (6,) for r in fake_discord.interaction_responses)
    assert len(fake_discord.interaction_responses) == 2  # both presses acknowledged
    # The notice now says how it ended, without buttons; Eve is told she is in.
    shown = fake_discord.messages[int(notice["message_id"])]
    await fake_discord.wait_for(lambda: not shown["components"])
    assert shown["content"].startswith("Eve (Discord id 77) asked to talk to me")
    assert "Approved: they can talk to me now" in shown["content"]
    await fake_discord.wait_for(lambda: _said_start(fake_discord, "Good news: my owner approved"))
    welcome = next(m for m in fake_discord.sent if m["content"].startswith("Good news"))
    assert welcome["channel_id"] == dm_channel_id(77)
    fake_discord.message("hello again", author=77, author_name="Eve", guild=False)
    await fake_discord.wait_for(lambda: _said(fake_discord, "echo: hello again"))
    await app.idle()


def _said_start(fake_discord, text: str) -> bool:
    return any(m["content"].startswith(text) for m in fake_discord.sent)


async def test_a_notice_answered_by_typing_the_command_loses_its_buttons(
    discord_gateway, fake_discord
):
    app = await discord_gateway()
    fake_discord.message("hi", author=77, author_name="Eve", guild=False)
    await fake_discord.wait_for(
        lambda: any("wants to talk" in m["content"] for m in fake_discord.sent)
    )
    notice = next(m for m in fake_discord.sent if "wants to talk" in m["content"])
    code = re.search(r"pairing code is (\w+)", notice["content"])[1]
    fake_discord.message(f"/deny {code}", guild=False)  # typed by the owner, not pressed
    shown = fake_discord.messages[int(notice["message_id"])]
    await fake_discord.wait_for(lambda: not shown["components"])
    assert shown["content"].endswith("Denied: their code no longer works.")
    await app.idle()


async def test_a_reply_to_a_message_deleted_meanwhile_still_arrives(
    discord_gateway, fake_discord, fake_api
):
    await discord_gateway()
    asked = fake_discord.message("what now?", author=6, mentions_bot=True)

    def answer(body):
        fake_discord.messages.pop(int(asked["id"]))  # deleted while the model thought
        return Reply("Here is what now.")

    fake_api.brain = answer
    sent = await fake_discord.wait_sent(1)
    assert sent[0]["content"] == "Here is what now."


async def test_an_interaction_that_expires_midway_loses_no_piece_and_repeats_none():
    """A command's answer in several pieces: the interaction expires after the first
    follow-up, and the rest goes to the channel, each piece once, in order."""
    from types import SimpleNamespace

    import discord

    from channels.discord import replies
    from gateway.contract.events import OutboundMessage, SessionKey

    posted: list[str] = []

    class Followup:
        async def send(self, piece, **options):
            if posted:
                gone = SimpleNamespace(status=404, reason="Not Found")
                raise discord.NotFound(gone, {"code": 10015, "message": "Unknown Webhook"})
            posted.append(f"followup: {piece}")

    class Channel:
        id = 1

        async def send(self, piece, **options):
            posted.append(f"channel: {piece}")
            return SimpleNamespace(id=len(posted))

    async def resolve(key):
        return Channel()

    text = "\n\n".join(f"Part {n}. " + "words " * 300 for n in range(3))
    key = SessionKey("discord", "channel", "1")
    last = await replies.send(
        OutboundMessage(key, text), SimpleNamespace(followup=Followup()), resolve
    )
    assert [p.split(":")[0] for p in posted] == ["followup", "channel", "channel"]
    assert [p.split(". ")[0].split(": ")[1] for p in posted] == ["Part 0", "Part 1", "Part 2"]
    assert last is not None and last.id == 3


async def test_buttons_go_under_the_last_piece_only():
    from types import SimpleNamespace

    from channels.discord import replies
    from gateway.contract.events import OutboundMessage, SessionKey

    views: list[object] = []

    class Channel:
        id = 1

        async def send(self, piece, **options):
            views.append(options.get("view"))
            return SimpleNamespace(id=len(views))

    async def resolve(key):
        return Channel()

    key = SessionKey("discord", "dm", "42")
    text = "\n\n".join(f"Part {n}. " + "words " * 300 for n in range(3))
    buttons = (("Approve", "/approve ABC"), ("Deny", "/deny ABC"))
    await replies.send(OutboundMessage(key, text, buttons=buttons), None, resolve)
    assert len(views) == 3 and views[:2] == [None, None] and views[2] is not None
    views.clear()
    await replies.send(OutboundMessage(key, text), None, resolve)
    assert views == [None, None, None]

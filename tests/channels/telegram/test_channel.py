"""The Telegram adapter end to end: real python-telegram-bot ↔ fake Bot API, real anthropic ↔
fake Messages API, the gateway and agent in between."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import socket
import struct
import zlib

import aiohttp
import pytest

from channels.base import ChannelStartError
from channels.telegram.html import visible_text
from gateway.ops.cli import main
from tests.conftest import OWNER, TG_GROUP
from tests.fakes.anthropic_api import Reply, last_user_text
from tests.fakes.telegram_api import BOT_ID, BOT_USERNAME, Fault, check_telegram_html


def _requests_text(fake_api) -> str:
    return "\n".join(r.raw for r in fake_api.message_requests)


def _png(width: int = 2, height: int = 2) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    raw = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


async def test_dm_from_the_owner_is_answered_with_typing_first(
    telegram_gateway, fake_telegram, fake_api
):
    await telegram_gateway()
    release = asyncio.Event()
    fake_api.enqueue(Reply("echo: hello there", hold=release))  # an answer that takes a while
    fake_telegram.text("hello there")
    await fake_telegram.wait_for(lambda: bool(fake_telegram.calls_to("sendChatAction")))
    release.set()
    sent = await fake_telegram.wait_sent(1)
    assert sent[0]["chat_id"] == str(OWNER)
    assert sent[0]["shown"] == "echo: hello there"
    assert sent[0]["parse_mode"] == "HTML"
    assert "reply_parameters" not in sent[0]  # no quoting in a private chat
    actions = fake_telegram.calls_to("sendChatAction")
    assert actions and actions[0].params["action"] == "typing"
    assert actions[0].at < fake_telegram.calls_to("sendMessage")[0].at
    # The session is private, so the owner's long-term memory is in its prompt.
    assert "MEMORY.md" in fake_api.message_requests[0].raw
    # The typing loop ended with the turn, before the reply went out.
    assert not [t for t in asyncio.all_tasks() if "_keep_typing" in repr(t.get_coro())]


async def test_an_answer_that_comes_at_once_sends_no_typing_action(
    telegram_gateway, fake_telegram, fake_api
):
    gateway = await telegram_gateway()
    gateway.channels["telegram"].typing_after = 30.0  # longer than any turn here can take
    fake_telegram.text("hello there")
    await fake_telegram.wait_sent(1)
    assert fake_telegram.calls_to("sendChatAction") == []
    assert not [t for t in asyncio.all_tasks() if "_keep_typing" in repr(t.get_coro())]


async def test_start_registers_the_command_menu(telegram_gateway, fake_telegram):
    gateway = await telegram_gateway()
    await fake_telegram.wait_for(lambda: bool(fake_telegram.calls_to("setMyCommands")))
    commands = fake_telegram.calls_to("setMyCommands")[0].params["commands"]
    assert [c["command"] for c in commands] == [
        "new",
        "reset",
        "status",
        "compact",
        "stop",
        "usage",
        "done",
        "help",
    ]
    assert gateway.channels["telegram"].bot_username == BOT_USERNAME


async def test_unknown_dm_gets_a_pairing_code_then_is_served_after_approval(
    telegram_gateway, fake_telegram, fake_api, home
):
    await telegram_gateway()
    fake_telegram.text("hi, who are you?", user=77, first_name="Eve")
    await fake_telegram.wait_for(lambda: any(m["chat_id"] == "77" for m in fake_telegram.sent))
    told = next(m for m in fake_telegram.sent if m["chat_id"] == "77")
    code = re.search(r"pairing code: ([A-Z0-9]{8})", told["shown"]).group(1)
    assert fake_api.message_requests == []  # nothing reached the model

    assert main(["pairing", "approve", code, "--home", str(home)], environ={}) == 0

    canary = "CANARY-owner-only-4b1d"
    (home / "workspace" / "MEMORY.md").write_text(f"- {canary}\n")
    fake_telegram.text("hi again", user=77, first_name="Eve")
    await fake_telegram.wait_for(
        lambda: any(m["shown"] == "echo: hi again" for m in fake_telegram.sent)
    )
    answer = next(m for m in fake_telegram.sent if m["shown"] == "echo: hi again")
    assert answer["chat_id"] == "77"
    # A paired person is a guest, not the owner: their chat never sees the owner's memory.
    assert canary not in _requests_text(fake_api)
    assert "not your owner" in fake_api.message_requests[0].raw
    assert (home / "state" / "sessions" / "telegram:guest:77.jsonl").exists()


async def test_group_without_mention_is_silent_but_kept_as_context(
    telegram_gateway, fake_telegram, fake_api
):
    await telegram_gateway()
    fake_telegram.text("the meeting moved to 3pm", user=5, first_name="Bob", chat=TG_GROUP,
                       chat_type="supergroup")  # fmt: skip
    asked = fake_telegram.text(
        f"@{BOT_USERNAME} when is the meeting?",
        user=6,
        first_name="Cy",
        chat=TG_GROUP,
        chat_type="supergroup",
    )
    sent = await fake_telegram.wait_sent(1)
    assert len(fake_api.message_requests) == 1
    body = fake_api.message_requests[0].body
    user_text = last_user_text(body)
    assert "Bob: the meeting moved to 3pm" in user_text
    assert "Cy (id 6)" in user_text  # who is talking, in a shared session
    assert sent[0]["chat_id"] == str(TG_GROUP)
    assert sent[0]["reply_parameters"]["message_id"] == asked["message_id"]
    assert len(fake_telegram.sent) == 1


async def test_a_mention_of_someone_else_in_a_group_is_context_not_a_question(
    telegram_gateway, fake_telegram, fake_api
):
    await telegram_gateway()
    group = {"chat": TG_GROUP, "chat_type": "supergroup"}
    fake_telegram.text("@alice what do you think?", user=5, first_name="Bob", **group)
    fake_telegram.text(f"@{BOT_USERNAME} and what do you think?", user=6, first_name="Cy", **group)
    sent = await fake_telegram.wait_sent(1)
    # The first reply answers Cy (a turn for Bob's message would have come first, in order).
    assert sent[0]["shown"].endswith("and what do you think?")
    # One turn, for the message addressed to the bot; Bob's question to Alice came with it.
    assert len(fake_api.message_requests) == 1
    assert "Bob: @alice what do you think?" in last_user_text(fake_api.message_requests[0].body)
    assert len(fake_telegram.sent) == 1


async def test_reply_to_the_bot_in_a_group_is_answered_with_a_quote(
    telegram_gateway, fake_telegram
):
    await telegram_gateway()
    bot_message = {
        "message_id": 1,
        "date": 0,
        "chat": {"id": TG_GROUP, "type": "supergroup", "title": "Test group"},
        "from": {"id": BOT_ID, "is_bot": True, "first_name": "Corvid"},
        "text": "an earlier answer",
    }
    msg = fake_telegram.text(
        "and what about tomorrow?", user=5, chat=TG_GROUP, chat_type="supergroup",
        reply_to=bot_message,
    )  # fmt: skip
    sent = await fake_telegram.wait_sent(1)
    assert sent[0]["reply_parameters"]["message_id"] == msg["message_id"]
    assert sent[0]["shown"].endswith("and what about tomorrow?")


async def test_forum_topics_are_their_own_sessions(telegram_gateway, fake_telegram, home):
    await telegram_gateway()
    fake_telegram.text(f"@{BOT_USERNAME} hi from the topic", user=5, chat=TG_GROUP,
                       chat_type="supergroup", thread=7)  # fmt: skip
    sent = await fake_telegram.wait_sent(1)
    assert sent[0]["message_thread_id"] == "7"
    sessions = {p.name for p in (home / "state" / "sessions").iterdir()}
    assert any("topic" in name and "7" in name for name in sessions), sessions


async def test_commands(telegram_gateway, fake_telegram, fake_api):
    await telegram_gateway()
    fake_telegram.text("/status")
    sent = await fake_telegram.wait_sent(1)
    assert "telegram:private:42" in sent[0]["shown"]
    # In a group: for another bot → ignored; from a stranger → refused; from the owner → done.
    group = {"chat": TG_GROUP, "chat_type": "supergroup"}
    fake_telegram.text("/new@some_other_bot", **group)
    fake_telegram.text(f"/new@{BOT_USERNAME}", user=5, **group)
    fake_telegram.text(f"/new@{BOT_USERNAME}", **group)
    sent = await fake_telegram.wait_sent(3)
    assert sent[1]["shown"] == "Only my owner can use commands here."
    assert sent[2]["shown"].startswith("Started a new session")
    assert len(sent) == 3
    assert fake_api.message_requests == []


async def test_a_stopped_request_is_not_asked_again_with_the_next_message(
    telegram_gateway, fake_telegram, fake_api
):
    never = asyncio.Event()

    async def hang(body):
        await never.wait()

    await telegram_gateway()
    fake_api.brain = hang
    fake_telegram.text("long task please")
    await fake_api.wait_for_requests(1)
    fake_telegram.text("/stop")
    sent = await fake_telegram.wait_sent(1)
    assert sent[0]["shown"] == "Stopped."
    fake_api.brain = lambda body: Reply("echo: " + json.dumps(body["messages"]))
    fake_telegram.text("first")
    sent = await fake_telegram.wait_sent(2)
    assert "first" in sent[1]["shown"] and "long task please" not in sent[1]["shown"]


async def test_refused_html_is_sent_again_as_plain_text(telegram_gateway, fake_telegram, fake_api):
    await telegram_gateway()
    fake_api.enqueue(Reply("Here is **bold** and `code`."))
    fake_telegram.fail(
        "sendMessage",
        Fault(
            400, 'Bad Request: can\'t parse entities: Unsupported start tag "x" at byte offset 0'
        ),
    )
    fake_telegram.text("format something")
    sent = await fake_telegram.wait_sent(1)
    assert "parse_mode" not in sent[0]
    assert sent[0]["text"] == "Here is **bold** and `code`."


async def test_a_piece_refused_even_as_text_becomes_a_notice_and_the_rest_is_sent(
    telegram_gateway, fake_telegram, fake_api
):
    from channels.telegram.replies import UNSENDABLE

    await telegram_gateway()
    fake_api.enqueue(Reply("First part. " * 400 + "\n\nSecond part, which must arrive."))
    refused = Fault(400, "Bad Request: message text is empty")
    fake_telegram.fail("sendMessage", refused, refused)
    fake_telegram.text("two parts please")
    sent = await fake_telegram.wait_sent(2)
    assert sent[0]["shown"] == UNSENDABLE
    assert sent[1]["shown"].endswith("Second part, which must arrive.")


async def test_a_lone_surrogate_from_the_model_is_replaced_not_fatal(
    telegram_gateway, fake_telegram, fake_api, home
):
    await telegram_gateway()
    fake_api.enqueue(Reply("half an emoji: \ud83d and on"))
    fake_telegram.text("hi")
    sent = await fake_telegram.wait_sent(1)
    assert sent[0]["shown"] == "half an emoji: \ufffd and on"
    transcript = (home / "state" / "sessions" / "telegram:private:42.jsonl").read_text()
    assert "half an emoji: \ufffd and on" in transcript


async def test_a_reply_of_only_zero_width_characters_is_said_to_be_empty(
    telegram_gateway, fake_telegram, fake_api
):
    from gateway.runtime.turns import BLANK_ANSWER

    await telegram_gateway()
    fake_api.enqueue(Reply("\u200b\u200d\ufeff"))
    fake_telegram.text("say nothing")
    sent = await fake_telegram.wait_sent(1)
    assert sent[0]["shown"] == BLANK_ANSWER


async def test_a_six_kilobyte_code_line_goes_out_in_two_pieces(
    telegram_gateway, fake_telegram, fake_api
):
    await telegram_gateway()
    line = "".join(f"{i:05d}," for i in range(1000))  # 6,000 characters, no newline
    fake_api.enqueue(Reply("```\n" + line + "\n```"))
    fake_telegram.text("one long line")
    await fake_telegram.wait_for(
        lambda: "".join(s["shown"] for s in fake_telegram.sent).count("00999,") == 1
    )
    assert len(fake_telegram.sent) == 2
    assert all("<pre>" in s["text"] for s in fake_telegram.sent)
    assert "".join(s["shown"] for s in fake_telegram.sent).replace("\n", "") == line


async def test_a_link_with_code_text_keeps_its_target(telegram_gateway, fake_telegram, fake_api):
    await telegram_gateway()
    fake_api.enqueue(Reply("Try [`httpx`](https://www.python-httpx.org)."))
    fake_telegram.text("which library?")
    sent = await fake_telegram.wait_sent(1)
    assert '<a href="https://www.python-httpx.org">httpx</a>' in sent[0]["text"]


async def test_a_ten_thousand_character_reply_with_code_is_split_cleanly(
    telegram_gateway, fake_telegram, fake_api
):
    await telegram_gateway()
    parts = []
    for i in range(8):
        parts.append(f"Section {i}: " + "a sentence of prose. " * 30)
        parts.append("```python\n" + "".join(f"value_{i}_{j} = {j}\n" for j in range(40)) + "```")
    reply = "\n\n".join(parts)
    assert len(reply) >= 10_000
    fake_api.enqueue(Reply(reply))
    fake_telegram.text("write a lot")
    await fake_telegram.wait_for(
        lambda: bool(fake_telegram.sent) and "value_7_39 = 39" in fake_telegram.sent[-1]["shown"]
    )
    n = len(fake_telegram.sent)
    assert n >= 3
    for s in fake_telegram.sent:
        assert s["parse_mode"] == "HTML"  # every piece was valid HTML, none fell back
        assert check_telegram_html(s["text"]) is None
        assert len(s["shown"].encode("utf-16-le")) // 2 <= 4096
        assert s["text"].count("<pre>") == s["text"].count("</pre>")
    shown = "\n".join(s["shown"] for s in fake_telegram.sent)
    for i in range(8):
        for j in range(40):
            assert f"value_{i}_{j} = {j}" in shown


async def test_a_photo_reaches_the_model_as_an_image(telegram_gateway, fake_telegram, fake_api):
    await telegram_gateway(max_image_bytes=10_000)
    small, big = _png(2, 2), _png(40, 40) + b"\x00" * 20_000
    small_id, small_uid = fake_telegram.add_file(small)
    big_id, big_uid = fake_telegram.add_file(big)
    fake_telegram.text(
        "",
        caption="what is this?",
        photo=[
            {"file_id": small_id, "file_unique_id": small_uid, "width": 2, "height": 2,
             "file_size": len(small)},
            {"file_id": big_id, "file_unique_id": big_uid, "width": 40, "height": 40,
             "file_size": len(big)},
        ],
    )  # fmt: skip
    await fake_telegram.wait_sent(1)
    content = fake_api.message_requests[0].body["messages"][-1]["content"]
    images = [b for b in content if b["type"] == "image"]
    assert len(images) == 1
    assert images[0]["source"]["media_type"] == "image/png"
    assert base64.b64decode(images[0]["source"]["data"]) == small  # largest under the cap
    assert "what is this?" in json.dumps(content)


async def test_documents_go_to_the_inbox_private_ones_out_of_groups_reach(
    telegram_gateway, fake_telegram, fake_api, home
):
    await telegram_gateway(max_file_bytes=1000)
    file_id, uid = fake_telegram.add_file(b"quarterly numbers")
    fake_telegram.text("", caption="keep this",
                       document={"file_id": file_id, "file_unique_id": uid,
                                 "file_name": "../report.txt", "mime_type": "text/plain",
                                 "file_size": 17})  # fmt: skip
    await fake_telegram.wait_sent(1)
    saved = list((home / "workspace" / "inbox" / "private").rglob("*"))
    files = [p for p in saved if p.is_file()]
    assert [p.read_bytes() for p in files] == [b"quarterly numbers"]
    assert files[0].name == "report.txt"
    told = last_user_text(fake_api.message_requests[0].body)
    assert "inbox/private/" in told and "report.txt" in told

    big_id, big_uid = fake_telegram.add_file(b"x" * 2000)
    fake_telegram.text("", caption="and this", document={
        "file_id": big_id, "file_unique_id": big_uid, "file_name": "big.bin",
        "mime_type": "application/octet-stream", "file_size": 2000})  # fmt: skip
    await fake_telegram.wait_sent(2)
    assert "was not saved" in last_user_text(fake_api.message_requests[1].body)
    # Its size said it was too large: it was never downloaded.
    fetched = [c.params.get("file_id") for c in fake_telegram.calls_to("getFile")]
    assert fetched == [file_id]


async def test_a_document_sent_in_a_group_is_kept_in_that_groups_inbox(
    telegram_gateway, fake_telegram, fake_api, home
):
    await telegram_gateway()
    file_id, uid = fake_telegram.add_file(b"team plan")
    doc = {"file_id": file_id, "file_unique_id": uid, "file_name": "plan.txt",
           "mime_type": "text/plain", "file_size": 9}  # fmt: skip
    from tests.fakes.telegram_api import auto_entities

    caption = f"@{BOT_USERNAME} keep this"
    fake_telegram.text("", caption=caption, caption_entities=auto_entities(caption), document=doc,
                       user=5, chat=TG_GROUP, chat_type="supergroup")  # fmt: skip
    await fake_telegram.wait_sent(1)
    chat = f"telegram-group-{TG_GROUP}"
    [saved] = [p for p in (home / "workspace" / "inbox" / "chats" / chat).rglob("*") if p.is_file()]
    assert saved.read_bytes() == b"team plan" and saved.parent.parent.name == chat
    assert not (home / "workspace" / "inbox" / "private").exists() or not any(
        p.is_file() for p in (home / "workspace" / "inbox" / "private").rglob("*")
    )
    assert f"inbox/chats/{chat}/" in last_user_text(fake_api.message_requests[0].body)


async def test_voice_gets_a_short_reply_and_no_model_call(
    telegram_gateway, fake_telegram, fake_api
):
    await telegram_gateway()
    fake_telegram.text("", voice={"file_id": "v", "file_unique_id": "v", "duration": 3})
    sent = await fake_telegram.wait_sent(1)
    assert "voice messages" in sent[0]["shown"]
    assert fake_api.message_requests == []


async def test_edits_and_bots_are_ignored(telegram_gateway, fake_telegram, fake_api):
    await telegram_gateway()
    fake_telegram.push(
        {"chat": {"id": OWNER, "type": "private"}, "from": {"id": OWNER, "is_bot": False,
         "first_name": "Ada"}, "text": "edited text", "edit_date": 1},
        kind="edited_message",
    )  # fmt: skip
    fake_telegram.text("from a bot", user=OWNER, is_bot=True)
    fake_telegram.text("real one")
    sent = await fake_telegram.wait_sent(1)
    assert [s["shown"] for s in sent] == ["echo: real one"]
    assert len(fake_api.message_requests) == 1


async def test_flood_limit_is_waited_out(telegram_gateway, fake_telegram):
    await telegram_gateway()
    fake_telegram.fail("sendMessage", Fault(429, "Too Many Requests: retry after 1", 1))
    fake_telegram.text("hello")
    sent = await fake_telegram.wait_sent(1)
    attempts = fake_telegram.calls_to("sendMessage")
    assert len(attempts) == 2
    assert attempts[1].at - attempts[0].at >= 0.9
    assert sent[0]["shown"] == "echo: hello"


async def test_bad_gateway_is_retried_and_a_lost_reply_is_recorded(telegram_gateway, fake_telegram):
    gateway = await telegram_gateway()
    fake_telegram.fail("sendMessage", Fault(502, "Bad Gateway"))
    fake_telegram.text("one")
    sent = await fake_telegram.wait_sent(1)
    assert sent[0]["shown"] == "echo: one"
    # Blocked by the user: not retried, recorded with the session key.
    fake_telegram.fail("sendMessage", Fault(403, "Forbidden: bot was blocked by the user"))
    fake_telegram.text("two")
    await fake_telegram.wait_for(lambda: len(fake_telegram.calls_to("sendMessage")) == 3)
    fake_telegram.text("three")
    sent = await fake_telegram.wait_sent(2)
    assert sent[1]["shown"] == "echo: three"
    # Turns in a session run in order, so the failure of "two" was recorded before "three".
    [failed] = gateway.undelivered()
    assert str(failed.out.key) == "telegram:private:42" and failed.out.text == "echo: two"
    assert failed.status == "failed" and failed.error.startswith("Forbidden: ")


async def test_conflict_stops_the_gateway_with_a_clear_reason(telegram_gateway, fake_telegram):
    gateway = await telegram_gateway()
    conflict = Fault(409, "Conflict: terminated by other getUpdates request")
    fake_telegram.fail("getUpdates", *[conflict] * 4)
    async with asyncio.timeout(10):
        reason = await gateway.wait_failed()
    assert "409 Conflict" in reason
    assert "another program" in reason


async def test_an_invalid_token_stops_start_up_with_a_clear_message(
    telegram_gateway, fake_telegram
):
    with pytest.raises(ChannelStartError, match="rejected the bot token") as err:
        await telegram_gateway(token="999:revoked-token")
    assert "revoked-token" not in str(err.value)
    assert fake_telegram.calls_to("getUpdates") == []


async def test_memory_md_never_reaches_a_group_session(
    telegram_gateway, fake_telegram, fake_api, home
):
    await telegram_gateway()
    canary = "CANARY-7f3a9-never-in-groups"
    (home / "workspace" / "MEMORY.md").write_text(f"# Memory\n\n- secret: {canary}\n")
    fake_api.enqueue(
        Reply(tool_calls=[("memory_get", {"path": "MEMORY.md"})]),
        Reply(tool_calls=[("read_file", {"path": "MEMORY.md"})]),
        Reply(tool_calls=[("memory_search", {"query": "secret"})]),
        Reply("I can't share that."),
    )
    fake_telegram.text(f"@{BOT_USERNAME} what is the secret in MEMORY.md?", user=5,
                       chat=TG_GROUP, chat_type="supergroup")  # fmt: skip
    await fake_telegram.wait_sent(1)
    assert len(fake_api.message_requests) == 4
    assert canary not in _requests_text(fake_api)
    # The same file does reach the owner's private chat (the check above can fail).
    fake_telegram.text("what do you remember?")
    await fake_telegram.wait_sent(2)
    assert canary in fake_api.message_requests[-1].raw


async def test_webhook_mode(telegram_gateway, fake_telegram):
    # The port stays bound (not listening) until the test ends, so nothing else is given it
    # before the webhook's server binds it too: both with SO_REUSEADDR, as tornado binds.
    reserved = socket.socket()
    reserved.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    reserved.bind(("127.0.0.1", 0))
    port = reserved.getsockname()[1]
    await telegram_gateway(
        webhook={
            "url": "https://bot.example.org/hook",
            "listen": "127.0.0.1",
            "port": port,
            "path": "hook",
            "secret_token": "s3cret-token",
        }
    )
    assert fake_telegram.webhook_url == "https://bot.example.org/hook"
    assert fake_telegram.calls_to("setWebhook")[0].params["secret_token"] == "s3cret-token"
    assert fake_telegram.calls_to("getUpdates") == []
    update = {
        "update_id": 1,
        "message": {
            "message_id": 5, "date": 0, "text": "via webhook",
            "chat": {"id": OWNER, "type": "private", "first_name": "Ada"},
            "from": {"id": OWNER, "is_bot": False, "first_name": "Ada"},
        },
    }  # fmt: skip
    url = f"http://127.0.0.1:{port}/hook"
    async with aiohttp.ClientSession() as http:
        forged = {"X-Telegram-Bot-Api-Secret-Token": "wrong"}
        async with http.post(url, json=update, headers=forged) as resp:
            assert resp.status == 403
        good = {"X-Telegram-Bot-Api-Secret-Token": "s3cret-token"}
        async with http.post(url, json=update, headers=good) as resp:
            assert resp.status == 200
    sent = await fake_telegram.wait_sent(1)
    assert [s["shown"] for s in sent] == ["echo: via webhook"]
    reserved.close()


async def test_a_tap_mention_counts_and_unlisted_groups_stay_silent(
    telegram_gateway, fake_telegram, fake_api
):
    await telegram_gateway()
    bot_user = {"id": BOT_ID, "is_bot": True, "first_name": "Corvid"}
    # A stranger in a group that is not on the list: not answered at all.
    fake_telegram.text(f"@{BOT_USERNAME} hello?", user=5, chat=-300, chat_type="group")
    # The owner in that group is told how to allow it.
    owner = fake_telegram.text(f"@{BOT_USERNAME} hello?", chat=-300, chat_type="group")
    sent = await fake_telegram.wait_sent(1)
    assert sent[0]["reply_parameters"]["message_id"] == owner["message_id"]
    assert "-300" in sent[0]["shown"] and "channels.telegram.groups" in sent[0]["shown"]
    # A text_mention (tapping the bot's name) addresses it in an allowed group.
    fake_telegram.text(
        "Corvid, what time is it?", user=5, chat=TG_GROUP, chat_type="supergroup",
        entities=[{"type": "text_mention", "offset": 0, "length": 6, "user": bot_user}],
    )  # fmt: skip
    sent = await fake_telegram.wait_sent(2)
    assert sent[1]["chat_id"] == str(TG_GROUP)
    assert sent[1]["shown"].endswith("Corvid, what time is it?")
    assert len(fake_api.message_requests) == 1


async def test_a_passing_conflict_after_a_restart_is_ridden_out(telegram_gateway, fake_telegram):
    gateway = await telegram_gateway()
    conflict = Fault(409, "Conflict: terminated by other getUpdates request")
    fake_telegram.fail("getUpdates", conflict, conflict)
    fake_telegram.text("still there?")
    sent = await fake_telegram.wait_sent(1)
    assert sent[0]["shown"] == "echo: still there?"
    assert not gateway.channels["telegram"].failure.done()


async def test_a_token_revoked_while_running_stops_the_gateway(telegram_gateway, fake_telegram):
    gateway = await telegram_gateway()
    fake_telegram.token = "123456:a-new-token"  # the old one now gets 401 Unauthorized
    async with asyncio.timeout(10):
        reason = await gateway.wait_failed()
    assert "no longer accepts the bot token" in reason


async def test_a_slow_download_in_one_chat_does_not_hold_up_another(
    telegram_gateway, fake_telegram, fake_api
):
    await telegram_gateway()
    release = asyncio.Event()
    file_id, uid = fake_telegram.add_file(b"big file")
    fake_telegram.hold_file(file_id, release)
    doc = {"file_id": file_id, "file_unique_id": uid, "file_name": "a.txt", "file_size": 8}
    fake_telegram.text("", caption="caption-first", document=doc)
    fake_telegram.text("queued behind the file")  # same chat: must wait, in order
    fake_telegram.text(f"@{BOT_USERNAME} meanwhile", user=5, chat=TG_GROUP,
                       chat_type="supergroup")  # fmt: skip
    sent = await fake_telegram.wait_sent(1)
    assert sent[0]["chat_id"] == str(TG_GROUP)
    release.set()
    await fake_telegram.wait_for(
        lambda: any(s["shown"] == "echo: queued behind the file" for s in fake_telegram.sent)
    )
    # The file's message reached the model before the one sent after it.
    last = fake_api.message_requests[-1].raw
    assert last.index("caption-first") < last.index("queued behind the file")


async def test_a_reply_that_renders_to_nothing_goes_out_as_text(
    telegram_gateway, fake_telegram, fake_api
):
    await telegram_gateway()
    fake_api.enqueue(Reply("[1]: https://example.com"))
    fake_telegram.text("a link please")
    sent = await fake_telegram.wait_sent(1)
    assert sent[0]["text"] == "[1]: https://example.com"
    assert "parse_mode" not in sent[0]


TELEGRAM_LIMIT = 4096  # Telegram's own number, in UTF-16 code units after entity parsing


def test_pieces_that_render_longer_are_cut_again():
    from channels.telegram.replies import pieces as _pieces

    table = "\n".join(["|" * 21, "|" + "---|" * 20] + ["|" * 21] * 1500)
    for piece, html in _pieces(table):
        shown = piece if html is None else visible_text(html)
        assert len(shown.encode("utf-16-le")) // 2 <= TELEGRAM_LIMIT


async def test_an_emoji_heavy_nested_list_never_yields_a_piece_over_the_limit(
    telegram_gateway, fake_telegram, fake_api
):
    await telegram_gateway()
    # Each emoji is two UTF-16 units; nesting adds indentation the source does not have.
    reply = "\n".join("  " * (i % 4) + "- " + "😀" * 40 + f" item {i}" for i in range(300))
    fake_api.enqueue(Reply(reply))
    fake_telegram.text("emoji list please")
    await fake_telegram.wait_for(lambda: any("item 299" in s["shown"] for s in fake_telegram.sent))
    sent = fake_telegram.sent
    assert len(sent) > 6
    # Every piece was accepted as HTML the first time (the fake refuses over 4096 units).
    assert all(s.get("parse_mode") == "HTML" for s in sent)
    assert len(fake_telegram.calls_to("sendMessage")) == len(sent)
    assert all(len(s["shown"].encode("utf-16-le")) // 2 <= TELEGRAM_LIMIT for s in sent)
    shown = "\n".join(s["shown"] for s in sent)
    assert all(f"item {i}\n" in shown + "\n" for i in range(300))


@pytest.mark.parametrize("streaming", [False, True])
async def test_an_emoji_heavy_reply_over_20000_characters_arrives_whole_in_pieces_that_fit(
    telegram_gateway, fake_telegram, fake_api, streaming
):
    """Replies this long are split off the event loop, whole or shown while written: the same
    measure (UTF-16 units, after rendering), nothing lost."""
    await telegram_gateway(streaming=streaming)
    paragraphs = [f"Paragraph {i:03d}: " + "😀 **crows** remember faces " * 12 for i in range(90)]
    reply = "\n\n".join(paragraphs)
    assert len(reply) > 20_000 and len(reply.encode("utf-16-le")) // 2 > 23_000
    fake_api.enqueue(Reply(reply))
    fake_telegram.text("tell me everything")
    await fake_telegram.wait_for(
        lambda: any("Paragraph 089" in s["shown"] for s in fake_telegram.sent)
    )
    sent = fake_telegram.sent
    assert len(fake_telegram.calls_to("sendMessage")) == len(sent)  # none refused, none resent
    assert all(s.get("parse_mode") == "HTML" for s in sent)
    assert all(len(s["shown"].encode("utf-16-le")) // 2 <= TELEGRAM_LIMIT for s in sent)
    shown = "\n\n".join(s["shown"] for s in sent)
    assert shown.split() == reply.replace("**", "").split()  # whole, in order


async def test_in_a_topic_the_bot_opened_only_what_is_addressed_to_it_starts_a_turn(
    telegram_gateway, fake_telegram, fake_api
):
    """Telegram makes every message in a forum topic a reply to the topic's opening service
    message; when the bot opened the topic, that is a message from the bot, yet not one that
    addresses it. A bare command that is not one of ours is another bot's, and one of ours
    within a sentence is not a command."""
    app = await telegram_gateway()
    opened = {
        "message_id": 900,
        "date": 0,
        "chat": {"id": TG_GROUP, "type": "supergroup"},
        "from": {"id": BOT_ID, "is_bot": True, "first_name": "Corvid"},
        "message_thread_id": 7,
        "forum_topic_created": {"name": "Plans", "icon_color": 1},
    }
    topic = {"chat": TG_GROUP, "chat_type": "supergroup", "thread": 7}
    fake_telegram.text("just chatting in the topic", reply_to=opened, **topic)
    fake_telegram.text("/weather", **topic)  # another bot's command, without its name
    fake_telegram.text("/weather", chat=TG_GROUP, chat_type="supergroup")
    # One of our commands, but inside a sentence: Telegram marks it, and it addresses no one.
    mid = [{"type": "bot_command", "offset": 4, "length": 5}]
    fake_telegram.text(
        "try /help when you can", entities=mid, chat=TG_GROUP, chat_type="supergroup"
    )
    fake_telegram.text(f"@{BOT_USERNAME} what did we plan?", reply_to=opened, **topic)
    last = fake_telegram.last_update_id()
    # Every update taken (Telegram is told so by the next poll's offset), every turn done.
    await fake_telegram.wait_for(
        lambda: any(
            int(c.params.get("offset", 0)) > last for c in fake_telegram.calls_to("getUpdates")
        )
    )
    await asyncio.wait_for(app.idle(), 10)
    [sent] = fake_telegram.sent
    assert sent["shown"].endswith("what did we plan?") and sent["message_thread_id"] == "7"
    [request] = fake_api.message_requests
    # The earlier line came along as context, not as a turn of its own.
    assert "just chatting in the topic" in request.raw


async def test_a_piece_is_measured_in_utf16_units_after_rendering(
    telegram_gateway, fake_telegram, fake_api
):
    """A table of emoji: short enough as Markdown, but rendered it is 4,997 UTF-16 units (3,977
    characters) — over Telegram's 4,096 units though under 4,096 characters. It is cut again
    before sending, so Telegram never refuses a piece."""
    await telegram_gateway()
    row = "|😀" * 20 + "|"
    fake_api.enqueue(Reply("\n".join([row, "|" + "---|" * 20] + [row] * 50) + "\n\nThe end."))
    fake_telegram.text("a table of faces")
    await fake_telegram.wait_for(lambda: any("The end." in s["shown"] for s in fake_telegram.sent))
    sent = fake_telegram.sent
    assert len(sent) >= 2
    assert len(fake_telegram.calls_to("sendMessage")) == len(sent)  # none refused, none resent
    assert all(s.get("parse_mode") == "HTML" for s in sent)
    assert all(len(s["shown"].encode("utf-16-le")) // 2 <= TELEGRAM_LIMIT for s in sent)
    # Every row arrived (a table cut in two repeats its header row in the second piece).
    assert sum(s["shown"].count("😀") for s in sent) >= 20 * 51


async def test_a_refusal_for_where_a_reply_goes_is_not_tried_again_as_text(
    telegram_gateway, fake_telegram
):
    """Telegram refused the message for its chat, not for its text: it is recorded as not
    delivered at once, not sent again as plain text or replaced by a notice."""
    gateway = await telegram_gateway()
    fake_telegram.fail("sendMessage", Fault(400, "Bad Request: chat not found"))
    fake_telegram.text("one")
    await fake_telegram.wait_for(lambda: len(fake_telegram.calls_to("sendMessage")) == 1)
    fake_telegram.text("two")
    sent = await fake_telegram.wait_sent(1)
    assert sent[0]["shown"] == "echo: two"
    assert len(fake_telegram.calls_to("sendMessage")) == 2
    [failed] = gateway.undelivered()
    assert failed.out.text == "echo: one" and "hat not found" in failed.error


async def _late_answer_kept_once_and_the_chat_goes_on(gateway, fake_telegram, release) -> None:
    """Telegram's late answer comes; the chat's next reply follows, "echo: hello" was posted
    once and is kept as one that may not have arrived."""
    release.set()
    fake_telegram.text("again")
    await fake_telegram.wait_for(lambda: "echo: again" in [s["shown"] for s in fake_telegram.sent])
    await asyncio.wait_for(gateway.idle(), 10)
    assert [s["shown"] for s in fake_telegram.sent] == ["echo: hello", "echo: again"]
    [uncertain] = gateway.undelivered()
    assert uncertain.status == "uncertain" and uncertain.out.text == "echo: hello"


async def test_a_reply_telegram_is_slow_to_confirm_is_never_sent_twice(
    telegram_gateway, fake_telegram, monkeypatch
):
    """Telegram posted the message, but its answer came after the read timeout. Sent again, it
    would show twice (Telegram drops no repeat): it is kept as one that may not have arrived,
    for corvid status, and the chat goes on."""
    from channels.telegram.transport import Transport

    # The send's read timeout, short (the long poll's own is set apart and stays long), and
    # long enough that a request not held is never late on a loaded machine.
    monkeypatch.setitem(Transport.__init__.__kwdefaults__, "read_timeout", 2.0)
    gateway = await telegram_gateway()
    release = fake_telegram.hold("sendMessage")
    fake_telegram.text("hello")
    await fake_telegram.wait_sent(1)
    await asyncio.wait_for(gateway.idle(), 10)  # the turn is over: its send has given up
    await _late_answer_kept_once_and_the_chat_goes_on(gateway, fake_telegram, release)


async def test_a_waiting_reply_telegram_is_slow_to_confirm_is_never_sent_twice(
    telegram_gateway, fake_telegram, monkeypatch
):
    """The same when the reply waited for Telegram to come back first: tried again, it is
    posted but answered late; it is not tried once more, and the chat's next reply is not
    held up behind it."""
    from channels.telegram.transport import Transport

    monkeypatch.setitem(Transport.__init__.__kwdefaults__, "read_timeout", 2.0)
    gateway = await telegram_gateway()
    # Every try of the first send fails (so the reply waits), then the retry is answered late.
    fake_telegram.fail("sendMessage", *[Fault(502, "Bad Gateway")] * 5)
    release = fake_telegram.hold("sendMessage")
    fake_telegram.text("hello")
    await fake_telegram.wait_sent(1)  # posted by the retry, its answer held back
    await asyncio.wait_for(gateway.gateway.delivery.retries.idle(), 10)
    await _late_answer_kept_once_and_the_chat_goes_on(gateway, fake_telegram, release)


async def test_a_group_reply_to_a_message_deleted_meanwhile_still_arrives(
    telegram_gateway, fake_telegram, fake_api
):
    await telegram_gateway()
    asked = fake_telegram.text(
        f"@{BOT_USERNAME} what now?", user=5, chat=TG_GROUP, chat_type="supergroup"
    )

    def answer(body):
        fake_telegram.deleted.add((TG_GROUP, asked["message_id"]))  # deleted meanwhile
        return Reply("Here is what now.")

    fake_api.brain = answer
    sent = await fake_telegram.wait_sent(1)
    assert sent[0]["shown"] == "Here is what now."


def test_pieces_are_cut_at_4000_characters_and_sent_whole_up_to_the_limit():
    """Cut a little under Telegram's 4,096 (rendering can add a character here and there); a
    piece that renders to exactly 4,096 UTF-16 units goes out as it is."""
    from channels.telegram.replies import _fit, pieces

    assert [len(p) for p, _ in pieces("x" * 8001)] == [4000, 4000, 1]
    for size, count in ((4096, 1), (4097, 3)):
        out: list[tuple[str, str | None]] = []
        _fit("a" * size, 4000, out)
        assert len(out) == count and all(html is not None for _, html in out)


def test_plain_text_is_sent_as_the_markdown_parser_would_render_it(monkeypatch):
    """A short reply with nothing Markdown could read as markup skips the parser: what goes
    out is exactly what parsing it gives, over every kind of text the shortcut takes or
    refuses (random texts of letters, markup characters, odd whitespace, line starts)."""
    import functools
    import random

    from channels.telegram import replies

    # Each text parsed once: ``pieces`` parses a text the shortcut refuses itself, and the
    # random texts repeat.
    monkeypatch.setattr(replies, "parsed_pieces", functools.cache(replies.parsed_pieces))

    parts = [
        "a", "Bob", "é", "日本", " ", " ", "\n", "\n\n", "\n\n\n", ".", ",", "!", "?", ":", "'",
        '"', "(", ")", "-", "+", "=", "#", ">", "<", "&", "*", "_", "`", "~", "[", "]", "|",
        "\\", "1.", "12)", "1234567890.", "\t", "\r", "\u00a0", "\u3000", "\u200b", "\x07",
        "---", "===", "    ", "http://x.org", "a@b.org", "&amp;", "<b>",
    ]  # fmt: skip
    few = ["a", "b", " ", "_", "*", "~", "`", "\n", "[", "]", "(", ")", "1", ".", "\x00", "&"]
    rng = random.Random(7)
    taken = 0
    for n in range(40_000):
        text = "".join(rng.choice(few if n % 2 else parts) for _ in range(rng.randint(1, 12)))
        got = replies.pieces(text)
        if replies._MARKUP.search(text) is None:
            taken += 1
        assert got == replies.parsed_pieces(text), repr(text)
    for marked in ("_a_", "x _Bob_ y", "a\x00b", "[a](b)", "a  \nb", "1) a", "Bob\n==="):
        assert replies._MARKUP.search(marked) is not None, marked
    plain = "Sure. You meet Ada at ten, then lunch with Bob (at one).\nAnything else? 3 + 4 = 7"
    assert replies._MARKUP.search(plain) is None
    assert replies.pieces(plain) == replies.parsed_pieces(plain) == [(plain, plain)]
    assert taken > 1_000  # the shortcut was tried, not only the parser


def test_a_link_defined_once_works_in_every_piece():
    """A reference-style link defined at the end of a long reply: every piece that uses it
    links to its target, even pieces that had to be cut again after rendering."""
    from channels.telegram.replies import pieces

    target = 'href="https://example.org/crows"'
    text = "See [the crows][c].\n\n" + "Words of prose here. " * 250 + "\n\nAgain [the crows][c]."
    text += "\n\n[c]: https://example.org/crows"
    cut = pieces(text)
    assert len(cut) >= 2 and target in str(cut[0][1]) and target in str(cut[-1][1])
    # Numbered "1." every time: rendered, the numbers grow and the pieces must be cut again.
    items = "".join(f"1. [crow][c] {n}\n" if n % 100 == 0 else f"1. a{n}\n" for n in range(1200))
    cut = pieces(items + "\n[c]: https://example.org/crows")
    assert len(cut) > 4 and all(html is not None for _, html in cut)
    assert sum(str(html).count(target) for _, html in cut) == 12  # every link, resolved
    shown = "\n".join(visible_text(str(html)) for _, html in cut) + "\n"
    assert all((f"crow {n}\n" if n % 100 == 0 else f"a{n}\n") in shown for n in range(1200))


async def test_a_photo_that_cannot_be_seen_is_said_so_to_the_model(
    telegram_gateway, fake_telegram, fake_api
):
    """Over the cap in every size (nothing downloaded), not an image once downloaded, gone from
    Telegram: each reaches the model as a note instead of an image. A photo of exactly the cap
    is seen."""
    cap = 10_000
    await telegram_gateway(max_image_bytes=cap)
    exact = _png(2, 2)
    exact += b"\x00" * (cap - len(exact))
    not_image = b"this is not a picture"
    sent = []
    for data, size in ((b"", cap + 1), (not_image, len(not_image)), (exact, cap), (None, 10)):
        file_id, uid = fake_telegram.add_file(data) if data is not None else ("gone", "ugone")
        photo = {"file_id": file_id, "file_unique_id": uid, "width": 2, "height": 2}
        fake_telegram.text("", caption="look", photo=[{**photo, "file_size": size}])
        sent.append(await fake_telegram.wait_sent(len(sent) + 1))
    asked = [json.dumps(r.body["messages"][-1]["content"]) for r in fake_api.message_requests]
    assert len(asked) == 4
    assert "is larger than" in asked[0] and '"image"' not in asked[0]
    assert "could not be read as an image" in asked[1] and '"image"' not in asked[1]
    assert '"type": "image"' in asked[2] and "[A photo" not in asked[2]
    assert "downloading it failed" in asked[3]
    assert len(fake_telegram.calls_to("getFile")) == 3  # not for the photo over the cap

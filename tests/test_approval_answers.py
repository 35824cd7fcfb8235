"""Who a request to act is for, and what an answer that never comes means: through the real
Telegram client and its fake, and the gateway's own chat for the gate's two kinds of no.

A group turn counts as the owner's request only when the owner wrote every message it answers;
a paired guest's ``/approval`` in their own chat answers nothing; at the gate, no answer in
time and nowhere to ask are each a no, whatever the tool.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from typing import Any

from agent.approvals.audit import MAX_SHOWN, recent
from channels.access import Access
from channels.pairing import PairingStore
from gateway.app import build_app
from gateway.channel_setup import build_channels
from gateway.contract.events import telegram_group
from gateway.running import App
from tests.conftest import GROUP, OWNER, PRIVATE, TG_GROUP, RecordingChannel, make_config
from tests.fakes.anthropic_api import Reply, tool_results
from tests.fakes.telegram_api import BOT_USERNAME, FakeTelegram

# The model searches the memory when a message says SEARCH, and writes a note when one says
# WRITE; the owner's config makes both ask first.
ASKING = {"tools": {"memory_search": "ask", "write_file": "ask"}}
MEMBER = 66
GUEST = 77
GROUP_KEY = telegram_group(TG_GROUP)


def brain(held: asyncio.Event, release: asyncio.Event) -> Any:
    async def answer(body: dict[str, Any]) -> Reply:
        results = tool_results(body)
        if results:
            return Reply("Results: " + " | ".join(str(r["content"]) for r in results))
        said = newest_request(body)
        if "HOLD" in said:
            held.set()
            await release.wait()
            return Reply("held")
        if sized := re.search(r"SEARCH (\d+) CHARACTERS", said):
            query = "x" * (int(sized.group(1)) - len('{"query": ""}'))
            return Reply(tool_calls=[("memory_search", {"query": query})])
        if "SEARCH" in said:
            return Reply(tool_calls=[("memory_search", {"query": "dentist"})])
        if "WRITE" in said:
            path = re.search(r"WRITE (\S+)", said)
            assert path is not None
            return Reply(tool_calls=[("write_file", {"path": path.group(1), "content": "x"})])
        return Reply("ok")

    return answer


def newest_request(body: dict[str, Any]) -> str:
    """Every text of the newest user message (a turn answering several has one each)."""
    content = body["messages"][-1]["content"]
    if isinstance(content, str):
        return content
    return "\n".join(str(b["text"]) for b in content if b.get("type") == "text")


@contextlib.asynccontextmanager
async def telegram(home, fake_api, fake_telegram: FakeTelegram) -> AsyncIterator[App]:
    section = fake_telegram.channel_config(allow_from=[str(OWNER)], groups=[str(TG_GROUP)])
    config = make_config(home, fake_api.base_url, channels={"telegram": section}, approvals=ASKING)
    app = build_app(config, build_channels(config))
    await app.start()
    try:
        yield app
    finally:
        await app.stop()


def requests_to_owner(fake_telegram: FakeTelegram) -> list[dict[str, Any]]:
    return [
        m
        for m in fake_telegram.sent
        if m["chat_id"] == str(OWNER) and m["shown"].startswith("Approval needed")
    ]


def in_group(fake_telegram: FakeTelegram, text: str, user: int) -> None:
    fake_telegram.text(f"@{BOT_USERNAME} {text}", user=user, chat=TG_GROUP, chat_type="supergroup")


async def test_a_group_turn_answering_the_owner_and_a_member_asks_nobody(
    home, fake_api, fake_telegram
):
    held, release = asyncio.Event(), asyncio.Event()
    fake_api.brain = brain(held, release)
    async with telegram(home, fake_api, fake_telegram) as app:
        # The owner alone asks in the group: the request reaches the owner's private chat.
        in_group(fake_telegram, "SEARCH", OWNER)
        await fake_telegram.wait_for(lambda: bool(requests_to_owner(fake_telegram)))
        [request] = requests_to_owner(fake_telegram)
        fake_telegram.press(request, "Deny")
        await fake_telegram.wait_for(
            lambda: any("declined memory_search" in m["shown"] for m in fake_telegram.sent)
        )
        # Then a turn that answers the owner's message and a member's together.
        in_group(fake_telegram, "HOLD", OWNER)
        await asyncio.wait_for(held.wait(), 10)
        in_group(fake_telegram, "SEARCH", OWNER)
        in_group(fake_telegram, "me too", MEMBER)
        await fake_telegram.wait_for(lambda: app.gateway.router.queued(GROUP_KEY) == 2)
        release.set()
        await fake_telegram.wait_for(
            lambda: any("only the owner's own requests" in m["shown"] for m in fake_telegram.sent)
        )
        await asyncio.wait_for(app.idle(), 10)
        assert len(requests_to_owner(fake_telegram)) == 1  # the first one only
        assert app.approvals is not None and app.approvals.waiting() == []
    events = [a.event for a in reversed(recent(home / "state" / "actions.sqlite"))]
    assert events == ["asked", "denied", "refused"]


async def test_a_guests_approval_in_their_own_chat_answers_nothing(home, fake_api, fake_telegram):
    fake_api.brain = brain(asyncio.Event(), asyncio.Event())
    async with telegram(home, fake_api, fake_telegram) as app:
        store = app.channels["telegram"].access.pairing
        pairing, _ = store.request("telegram", str(GUEST), "Eve")
        store.approve(pairing.code)
        fake_telegram.text("SEARCH")  # the owner's own request, waiting for the owner
        await fake_telegram.wait_for(lambda: bool(requests_to_owner(fake_telegram)))
        [request] = requests_to_owner(fake_telegram)
        request_id = re.search(r"\(request (\w+)\)", request["shown"]).group(1)  # type: ignore[union-attr]
        fake_telegram.text(f"/approval {request_id} once", user=GUEST, first_name="Eve")
        await fake_telegram.wait_for(
            lambda: any(m["chat_id"] == str(GUEST) for m in fake_telegram.sent)
        )
        [told] = [m for m in fake_telegram.sent if m["chat_id"] == str(GUEST)]
        assert told["shown"].startswith("Only my owner can answer a request to act")
        assert app.approvals is not None
        assert [r.id for r in app.approvals.waiting()] == [request_id]
        fake_telegram.text(f"/approval {request_id} deny")
        await fake_telegram.wait_for(
            lambda: any("declined memory_search" in m["shown"] for m in fake_telegram.sent)
        )
    events = [a.event for a in reversed(recent(home / "state" / "actions.sqlite"))]
    assert events == ["asked", "denied"]


# -- at the gate: no answer in time, and nowhere to ask -------------------------------------------


@contextlib.asynccontextmanager
async def recording(home, fake_api) -> AsyncIterator[tuple[App, RecordingChannel]]:
    """The gateway with the test's own channel, where user 1 is the owner (and no platform's
    private chat is configured: a shared chat's request has nowhere to go)."""
    fake_api.brain = brain(asyncio.Event(), asyncio.Event())
    channel = RecordingChannel()
    channel.access = Access(
        "test",
        allow_from=["1"],
        groups=[GROUP.id],
        pairing=PairingStore(home / "state" / "pairing.json"),
    )
    app = build_app(make_config(home, fake_api.base_url, approvals=ASKING), [channel])
    await app.start()
    try:
        yield app, channel
    finally:
        await app.stop()


async def test_no_answer_in_time_at_the_gate_is_a_no(home, fake_api):
    async with recording(home, fake_api) as (app, channel):
        assert app.approvals is not None
        app.approvals.timeout = 0.05  # the owner is asked, and never answers
        await asyncio.wait_for(channel.push("WRITE note.txt"), 10)
        assert any(m.buttons for m in channel.sent)  # the owner was asked
        reply = channel.texts(PRIVATE)[-1]
    assert "did not answer the request to run write_file in time" in reply
    assert "approved" not in reply
    assert not (home / "workspace" / "note.txt").exists()
    events = [(a.event, a.tool) for a in reversed(recent(home / "state" / "actions.sqlite"))]
    assert events == [("asked", "write_file"), ("unanswered", "write_file")]


async def test_nowhere_to_ask_at_the_gate_is_a_no(home, fake_api):
    target = f"chats/test-group-{GROUP.id}/note.txt"
    async with recording(home, fake_api) as (_app, channel):
        # The owner asks in a group; there is no private chat of theirs to ask in.
        await asyncio.wait_for(channel.push(f"WRITE {target}", key=GROUP, sender="1"), 10)
        reply = channel.texts(GROUP)[-1]
        assert not any(m.buttons for m in channel.sent)
    assert "there is no private chat to ask them in" in reply
    assert not (home / "workspace" / target).exists()
    events = [(a.event, a.tool) for a in reversed(recent(home / "state" / "actions.sqlite"))]
    assert events == [("asked", "write_file"), ("refused", "write_file")]


async def test_a_call_shown_whole_in_its_limit_is_asked_one_character_more_is_not(home, fake_api):
    async with recording(home, fake_api) as (app, channel):
        assert app.approvals is not None
        app.approvals.timeout = 0.05
        await asyncio.wait_for(channel.push(f"SEARCH {MAX_SHOWN} CHARACTERS"), 10)
        assert len([m for m in channel.sent if m.buttons]) == 1  # asked, at the limit
        await asyncio.wait_for(channel.push(f"SEARCH {MAX_SHOWN + 1} CHARACTERS"), 10)
        assert len([m for m in channel.sent if m.buttons]) == 1  # not asked
        reply = channel.texts(PRIVATE)[-1]
    assert f"too long to show them whole ({MAX_SHOWN + 1} characters; at most {MAX_SHOWN})" in reply
    trail = [(a.event, a.detail) for a in reversed(recent(home / "state" / "actions.sqlite"))]
    assert trail[-1] == (
        "refused",
        f"too long to show the owner whole ({MAX_SHOWN + 1} characters)",
    )

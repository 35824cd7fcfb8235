"""Pairing requests answered in the owner's Telegram chat: the notice, its buttons, the text
commands, and presses that do not count."""

from __future__ import annotations

import json

from tests.conftest import OWNER, TG_GROUP


def _to(fake_telegram, chat: int) -> list[dict]:
    return [m for m in fake_telegram.sent if m["chat_id"] == str(chat)]


def _said(fake_telegram, words: str) -> bool:
    return any(words in m["shown"] for m in fake_telegram.sent)


async def _stranger_asks(fake_telegram, user: int = 77, name: str = "Eve") -> tuple[dict, str]:
    """A stranger writes; returns the owner's notice and the stranger's code."""
    fake_telegram.text("hi, who are you?", user=user, first_name=name)
    await fake_telegram.wait_for(lambda: bool(_to(fake_telegram, OWNER)))
    notice = _to(fake_telegram, OWNER)[0]
    code = notice["shown"].split("pairing code is ")[1][:8]
    return notice, code


async def test_the_owner_approves_with_a_button_and_the_stranger_is_served(
    telegram_gateway, fake_telegram, fake_api
):
    app = await telegram_gateway()
    notice, code = await _stranger_asks(fake_telegram)
    assert notice["shown"].startswith(
        f"Eve (Telegram id 77) wants to talk to me. Their pairing code is {code}"
    )
    buttons = json.loads(notice["reply_markup"])["inline_keyboard"][0]
    assert [(b["text"], b["callback_data"]) for b in buttons] == [
        ("Approve", f"/approve {code}"),
        ("Deny", f"/deny {code}"),
    ]
    fake_telegram.press(notice, "Approve")
    await fake_telegram.wait_for(
        lambda: any("Approved Eve" in m["shown"] for m in fake_telegram.sent)
    )
    assert fake_telegram.answered  # the button's spinner was stopped
    fake_telegram.text("thanks!", user=77, first_name="Eve")
    await fake_telegram.wait_for(
        lambda: any(
            m["chat_id"] == "77" and m["shown"] == "echo: thanks!" for m in fake_telegram.sent
        )
    )
    await app.idle()


async def test_a_press_from_anyone_but_the_owner_counts_for_nothing(
    telegram_gateway, fake_telegram
):
    app = await telegram_gateway()
    notice, _ = await _stranger_asks(fake_telegram)
    before = len(fake_telegram.sent)
    fake_telegram.press(notice, "Approve", user=99)  # a forged press
    await fake_telegram.wait_for(lambda: fake_telegram.answered)
    await app.idle()
    assert len(fake_telegram.sent) == before
    assert not app.channels["telegram"].access.is_guest("77")


async def test_text_commands_deny_approve_and_revoke(telegram_gateway, fake_telegram, fake_api):
    app = await telegram_gateway()
    _, code = await _stranger_asks(fake_telegram)
    fake_telegram.text(f"/deny {code}")
    await fake_telegram.wait_for(
        lambda: any("Denied Eve" in m["shown"] for m in fake_telegram.sent)
    )
    fake_telegram.text(f"/approve {code}")
    await fake_telegram.wait_for(
        lambda: any(
            "Not approved: no pending pairing code" in m["shown"] for m in fake_telegram.sent
        )
    )
    # In a group, nobody answers pairing requests.
    fake_telegram.text(f"/approve {code}", chat=TG_GROUP, chat_type="supergroup")
    await fake_telegram.wait_for(
        lambda: any("Only my owner can answer" in m["shown"] for m in fake_telegram.sent)
    )
    store = app.channels["telegram"].access.pairing
    req, _ = store.request("telegram", "88", "Zed")
    fake_telegram.text(f"/approve {req.code.lower()}")
    await fake_telegram.wait_for(lambda: store.is_approved("telegram", "88"))
    fake_telegram.text("/revoke telegram 88")
    await fake_telegram.wait_for(
        lambda: any("Revoked telegram user 88" in m["shown"] for m in fake_telegram.sent)
    )
    assert not store.is_approved("telegram", "88")
    await app.idle()


def _notice_now(fake_telegram, notice: dict) -> tuple[str, str | None]:
    """What the owner's notice shows now, and its buttons (None: none left)."""
    where = (OWNER, notice["message_id"])
    return fake_telegram.chat[where], fake_telegram.markup[where]


async def test_an_answered_notice_loses_its_buttons_and_the_approved_person_is_told(
    telegram_gateway, fake_telegram
):
    app = await telegram_gateway()
    notice, code = await _stranger_asks(fake_telegram)
    assert _notice_now(fake_telegram, notice)[1] is not None
    fake_telegram.press(notice, "Approve")
    await fake_telegram.wait_for(lambda: _notice_now(fake_telegram, notice)[1] is None)
    shows, _ = _notice_now(fake_telegram, notice)
    assert shows.startswith(f"Eve (Telegram id 77) asked to talk to me (code {code}). Approved")
    await fake_telegram.wait_for(lambda: bool(_to(fake_telegram, 77)[1:]))
    told = _to(fake_telegram, 77)[-1]
    assert "my owner approved your request" in told["shown"]
    assert "reply_markup" not in told
    await app.idle()


async def test_a_notice_denied_by_command_says_so_and_the_stranger_is_not_told(
    telegram_gateway, fake_telegram
):
    app = await telegram_gateway()
    notice, code = await _stranger_asks(fake_telegram)
    asked = len(_to(fake_telegram, 77))
    fake_telegram.text(f"/deny {code}")
    await fake_telegram.wait_for(lambda: _notice_now(fake_telegram, notice)[1] is None)
    assert _notice_now(fake_telegram, notice)[0].endswith("Denied: their code no longer works.")
    await fake_telegram.wait_for(lambda: _said(fake_telegram, "Denied Eve"))
    await app.idle()
    assert len(_to(fake_telegram, 77)) == asked


async def test_approved_on_the_command_line_while_the_gateway_runs(
    telegram_gateway, fake_telegram, home
):
    import argparse
    import asyncio

    from gateway.ops.pairing import pairing_approve

    app = await telegram_gateway()
    notice, code = await _stranger_asks(fake_telegram)
    args = argparse.Namespace(code=code)
    assert await asyncio.to_thread(pairing_approve, args, home, {}) == 0
    await fake_telegram.wait_for(lambda: _notice_now(fake_telegram, notice)[1] is None)
    assert "Approved: they can talk to me now" in _notice_now(fake_telegram, notice)[0]
    await fake_telegram.wait_for(
        lambda: any("my owner approved" in m["shown"] for m in _to(fake_telegram, 77))
    )
    await app.idle()


async def test_a_notice_from_before_a_restart_loses_its_buttons_when_pressed(
    telegram_gateway, fake_telegram
):
    first = await telegram_gateway()
    notice, _ = await _stranger_asks(fake_telegram)
    await first.stop()
    app = await telegram_gateway()
    fake_telegram.press(notice, "Deny")
    await fake_telegram.wait_for(lambda: _notice_now(fake_telegram, notice)[1] is None)
    assert _notice_now(fake_telegram, notice)[0].endswith("Denied: their code no longer works.")
    await app.idle()


async def test_a_paired_guest_cannot_use_the_owners_commands_in_their_own_chat(
    telegram_gateway, fake_telegram
):
    """The owner's commands answer only in the owner's private chat: not in a group (above),
    nor in the direct chat of someone the owner paired."""
    app = await telegram_gateway()
    store = app.channels["telegram"].access.pairing
    guest, _ = store.request("telegram", "77", "Eve")
    store.approve(guest.code)
    _, code = await _stranger_asks(fake_telegram, user=88, name="Zed")
    said = {
        f"/approve {code}": "Only my owner can answer pairing requests",
        f"/deny {code}": "Only my owner can answer pairing requests",
        "/revoke telegram 42": "Only my owner can answer pairing requests",
        "/memory apply abc123": "Only my owner can answer a memory proposal",
        "/undo": "Only my owner can undo a change",
        "/approval abc123 once": "Only my owner can answer a request to act",
    }
    for n, command in enumerate(said, 1):
        fake_telegram.text(command, user=77, first_name="Eve")
        await fake_telegram.wait_for(lambda n=n: len(_to(fake_telegram, 77)) == n)
    for told, words in zip(_to(fake_telegram, 77), said.values(), strict=True):
        assert told["shown"].startswith(words), told["shown"]
    assert not store.is_approved("telegram", "88") and store.is_approved("telegram", "77")
    assert any(r.code == code for r in store.pending())
    await app.idle()
